package sink

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/target"
)

func testRouter(t testing.TB, db, coll string, limit int) *router {
	t.Helper()
	d, err := target.ParseDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := target.Parse(coll)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := target.Parse(c.Suffixed("_dead"))
	if err != nil {
		t.Fatal(err)
	}
	return newRouter(&Targets{Target: target.Target{Database: d, Collection: c}, DeadLetter: dl,
		Qualified: !d.Static(), Limit: limit, Overflow: "other"})
}

// Beyond the limit a record goes to its template with the record
// placeholders replaced; when that overflow target is new beyond the limit
// of overflow targets, the tag as well; a target once admitted stays.
func TestRouterOverflow(t *testing.T) {
	rt := testRouter(t, "db_$TAG[0]", "c_$TAG[1]_$ns", 2)
	rec := func(ns string) bson.Raw {
		raw, _ := bson.Marshal(bson.D{{Key: "ns", Value: ns}})
		return raw
	}
	for _, c := range []struct {
		tag, ns string
		want    dest
	}{
		{"a.x", "1", dest{coll: "db_a.c_x_1"}},
		{"a.x", "2", dest{coll: "db_a.c_x_2"}}, // the limit
		{"a.x", "1", dest{coll: "db_a.c_x_1"}},
		{"a.x", "3", dest{coll: "db_a.c_x_other", over: 1}},
		{"a.y", "3", dest{coll: "db_a.c_y_other", over: 1}}, // the overflow limit
		{"b.z", "5", dest{coll: "db_other.c_unknown_other", over: 2}},
		{"a.x", "4", dest{coll: "db_a.c_x_other", over: 1}},
	} {
		if got := rt.resolve(c.tag, rec(c.ns)); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.tag, c.ns, got, c.want)
		}
	}
	if got := rt.deadLetter("a.y", rec("3"), dest{over: 2}); got != "db_other.c_unknown_other_dead" {
		t.Errorf("dead letter of the last resort: %s", got)
	}
	if got := rt.deadLetter("a.x", rec("1"), dest{}); got != "db_a.c_x_1_dead" {
		t.Errorf("dead letter: %s", got)
	}
}
