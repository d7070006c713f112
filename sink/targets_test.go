package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

func testRouter(t testing.TB, db, coll string, limit int) *router {
	t.Helper()
	d, err := naming.ParseDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := naming.Parse(coll)
	if err != nil {
		t.Fatal(err)
	}
	dl, err := naming.Parse(c.Suffixed("_dead"))
	if err != nil {
		t.Fatal(err)
	}
	return newRouter(&Targets{Target: naming.Pair{Database: d, Collection: c}, DeadLetter: dl,
		Qualified: !d.Static(), Limit: limit, Overflow: "other"})
}

// nsRecord is a record whose field ns is ns.
func nsRecord(ns string) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: "ns", Value: ns}})
	return raw
}

// Beyond the limit a record goes to its template with the record
// placeholders replaced; when that overflow target is new beyond the limit
// of overflow targets, the tag as well; a target once admitted stays.
func TestRouterOverflow(t *testing.T) {
	rt := testRouter(t, "db_$TAG[0]", "c_$TAG[1]_$ns", 2)
	for _, c := range []struct {
		tag, ns string
		want    dest
	}{
		{"a.x", "1", dest{coll: "db_a.c_x_1"}},
		{"a.x", "2", dest{coll: "db_a.c_x_2"}}, // the limit
		{"a.x", "1", dest{coll: "db_a.c_x_1"}},
		{"a.x", "3", dest{coll: "db_a.c_x_other", over: 1}},
		{"a.y", "3", dest{coll: "db_a.c_y_other", over: 1}}, // the overflow limit
		{"b.z", "5", dest{coll: "db_other.c_other_other", over: 2}},
		{"a.x", "4", dest{coll: "db_a.c_x_other", over: 1}},
	} {
		if got := rt.resolve(c.tag, nsRecord(c.ns)); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.tag, c.ns, got, c.want)
		}
	}
	if got := rt.deadLetter("a.y", nsRecord("3"), dest{over: 2}); got != "db_other.c_other_other_dead" {
		t.Errorf("dead letter of the last resort: %s", got)
	}
	if got := rt.deadLetter("a.x", nsRecord("1"), dest{}); got != "db_a.c_x_1_dead" {
		t.Errorf("dead letter: %s", got)
	}
}

// The targets that exist already are opened before the first chunk: they
// are admitted beyond the limit and count towards it. Listing them is
// tried again after an error the server may answer otherwise, and given
// up, with a warning, after a refusal.
func TestRouterOpensExisting(t *testing.T) {
	ctx := context.Background()
	existing := [][2]string{{"db", "c_1"}, {"db", "c_2"}, {"db", "c_3"}}
	for _, c := range []struct {
		name   string
		errs   []error // what the listings return before they succeed
		calls  int
		opened bool
	}{
		{"listed", nil, 1, true},
		{"after a timeout", []error{context.DeadlineExceeded}, 2, true},
		{"refused", []error{mongo.CommandError{Code: 13, Name: "Unauthorized", Message: "not authorized"}}, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testRouter(t, "db", "c_$ns", 2)
			calls := 0
			rt.t.Existing = func(context.Context) ([][2]string, error) {
				calls++
				if calls <= len(c.errs) {
					return nil, c.errs[calls-1]
				}
				return existing, nil
			}
			log := &warnings{}
			for range 3 {
				if err := rt.openExisting(ctx, log); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("openExisting: %v", err)
				}
			}
			if refused := !c.opened; refused != (len(log.warned) == 1) {
				t.Errorf("warnings %q", log.warned)
			}
			if calls != c.calls {
				t.Errorf("Existing called %d times, want %d", calls, c.calls)
			}
			if n := rt.set.Len(); n != 3*b2i(c.opened) {
				t.Errorf("%d targets open, want %d", n, 3*b2i(c.opened))
			}
			if !c.opened {
				return
			}
			if got := rt.resolve("t", nsRecord("3")); got != (dest{coll: "c_3"}) {
				t.Errorf("a record of the third existing target goes to %+v", got)
			}
			if got := rt.resolve("t", nsRecord("9")); got.coll != "c_other" || got.over == 0 {
				t.Errorf("a record of a new target beyond the limit goes to %+v, want the overflow target", got)
			}
		})
	}
}

// Targets that exist already fill the limit, but of them only those whose
// record placeholders read target_overflow count towards the overflow
// targets' bound: a record of a new target goes to its tag's overflow
// target, not to the last resort.
func TestRouterExistingTargetsLeaveOverflowRoom(t *testing.T) {
	rt := testRouter(t, "k8s_$TAG[1]", "logs_$ns", 5)
	var existing [][2]string
	for _, ns := range []string{"a", "b", "c", "d", "e", "other"} {
		existing = append(existing, [2]string{"k8s_prod", "logs_" + ns})
	}
	rt.t.Existing = func(context.Context) ([][2]string, error) { return existing, nil }
	if err := rt.openExisting(context.Background(), quietLog{}); err != nil {
		t.Fatal(err)
	}
	if n := rt.overflow.Len(); n != 1 {
		t.Errorf("%d existing overflow targets, want 1 (k8s_prod.logs_other)", n)
	}
	if got := rt.resolve("kube.ovf", nsRecord("x")); got != (dest{coll: "k8s_ovf.logs_other", over: 1}) {
		t.Errorf("a record of tag kube.ovf beyond the limit goes to %+v, want k8s_ovf.logs_other", got)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// warnings is a Logger keeping its warnings.
type warnings struct {
	quietLog
	warned []string
}

func (w *warnings) Warnf(f string, args ...any) { w.warned = append(w.warned, fmt.Sprintf(f, args...)) }

// A flush whose listing of the existing targets gets no answer is given
// back to Fluent Bit; the next one lists them again, and writes. No
// record counts before it is written.
func TestFlushWaitsForExistingTargets(t *testing.T) {
	rt := testRouter(t, "db", "c_$TAG", 10)
	calls := 0
	rt.t.Existing = func(context.Context) ([][2]string, error) {
		if calls++; calls == 1 {
			return nil, context.DeadlineExceeded
		}
		return nil, nil
	}
	s, chunk := testSink(t, func(o *Options) { o.Targets = rt.t })
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Retry || !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("first flush: %v %v, want Retry after the listing's timeout", res.Status, res.Err)
	}
	if tot := s.Totals(); tot.Chunks != 0 || tot.Records != 0 || tot.Retries != 1 {
		t.Errorf("totals after the retry: %+v", tot)
	}
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Done || res.Stored != 3 {
		t.Fatalf("second flush: %v %v, %d stored", res.Status, res.Err, res.Stored)
	}
	if calls != 2 {
		t.Errorf("Existing called %d times, want 2", calls)
	}
	if tot := s.Totals(); tot.Chunks != 1 || tot.Records != 3 {
		t.Errorf("totals: %+v, want 1 chunk of 3 records", tot)
	}
}

// dbRecord is a record whose field db is db.
func dbRecord(db string) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: "db", Value: db}})
	return raw
}

// A record whose database would be one of MongoDB's own (admin, local,
// config, in any case) goes to the overflow target, its dead letters
// beside it; it takes no place among the targets target_limit admits. A
// database of the tag that is reserved sends the record to the overflow
// target whose tag is replaced too.
func TestRouterReservedDatabase(t *testing.T) {
	rt := testRouter(t, "$db", "x1", 1)
	for _, db := range []string{"admin", "local", "config", "ADMIN", "Local"} {
		got := rt.resolve("app", dbRecord(db))
		if want := (dest{coll: "other.x1", over: 1, reserved: strings.ToLower(db)}); got != want {
			t.Errorf("db %s: %+v, want %+v", db, got, want)
		}
		if dl := rt.deadLetter("app", dbRecord(db), got); dl != "other.x1_dead" {
			t.Errorf("db %s: dead letters to %s, want other.x1_dead", db, dl)
		}
	}
	if got := rt.resolve("app", dbRecord("app")); got != (dest{coll: "app.x1"}) {
		t.Errorf("db app after the reserved ones: %+v, want its own target (the reserved took no place)", got)
	}

	rt = testRouter(t, "$TAG", "fromtag", 10)
	for _, tag := range []string{"ADMIN", "local", "config"} {
		if got := rt.resolve(tag, nil); got != (dest{coll: "other.fromtag", over: 2, reserved: strings.ToLower(tag)}) {
			t.Errorf("tag %s: %+v", tag, got)
		}
	}
	if got := rt.resolve("admins", nil); got != (dest{coll: "admins.fromtag"}) {
		t.Errorf("tag admins: %+v", got)
	}

	// Each record is counted, and the warning names the databases and
	// where the records went.
	b := &parser.Batch{Records: []parser.Record{{Doc: []byte(dbRecord("admin"))}, {Doc: []byte(dbRecord("app"))}, {Doc: []byte(dbRecord("local"))}}}
	rt = testRouter(t, "$db", "x1", 10)
	r, over, reserved := rt.dests("t", b)
	if over != 2 || reserved != 2 {
		t.Errorf("dests: %d overflowed, %d reserved, want 2 and 2", over, reserved)
	}
	n, dbs, where := rt.reservedSent(reserved, r, time.Now())
	if n != 2 || !slices.Equal(dbs, []string{"admin", "local"}) || !slices.Equal(where, []string{"other.x1"}) {
		t.Errorf("reservedSent: %d, %v, %v", n, dbs, where)
	}
	if n, _ := rt.overflowed(over-reserved, r, time.Now()); n != 0 {
		t.Errorf("the reserved records counted as beyond target_limit: %d", n)
	}
}
