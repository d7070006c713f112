package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// reader is a mongolog reader of what props configure on e's database.
func reader(t *testing.T, e *env, props ...string) *mongolog.Reader {
	t.Helper()
	m := conf.Map{}
	for k, v := range e.props(props...) {
		m.Set(k, v)
	}
	cfg, err := conf.Parse(m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &mongolog.Reader{DB: e.db, Cfg: cfg}
}

// verify passes on what the plugin stores and names the bucket of each
// kind of corruption: a count off, an entry outside its window, a write
// applied twice, stats and counts that do not match, a duplicate value of
// a field that should be unique.
func TestVerify(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "module", "stats", "cost", "count_by", "level", "bucket_max_records", "200"}
	in, _, log := monitored(t, e, props...)
	chunk, _ := appSlice(t, 2000)
	mustDone(t, in.Flush("app.log", chunk), log)
	in.Exit()
	r := reader(t, e, props...)
	run := func() ([]mongolog.Problem, mongolog.Verified) {
		var ps []mongolog.Problem
		v, err := r.Verify(context.Background(), mongolog.VerifyOptions{Unique: "seq"}, func(p mongolog.Problem) { ps = append(ps, p) })
		if err != nil {
			t.Fatal(err)
		}
		return ps, v
	}
	ctx := context.Background()
	c := e.db.Collection("logs")
	// The empty placeholders a fence leaves, one recording a record
	// parked, hold no record and are no problem.
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "placeholder-1"}, {Key: "key", Value: bson.D{{Key: "module", Value: "x"}}}, {Key: "seq", Value: 1},
			{Key: "count", Value: 0}, {Key: "bytes", Value: int64(0)}, {Key: "sealed", Value: 1}},
		bson.D{{Key: "_id", Value: "placeholder-2"}, {Key: "key", Value: bson.D{{Key: "module", Value: "x"}}}, {Key: "seq", Value: 2},
			{Key: "count", Value: 0}, {Key: "bytes", Value: int64(0)}, {Key: "sealed", Value: true},
			{Key: "parked", Value: bson.D{{Key: "op", Value: 17}, {Key: "i", Value: 3}, {Key: "reason", Value: "refused by MongoDB"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	if ps, v := run(); len(ps) > 0 || v.Records != 2000 {
		t.Fatalf("%d records verified, problems on what the plugin stored: %v", v.Records, ps)
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"placeholder-1", "placeholder-2"}}}}}); err != nil {
		t.Fatal(err)
	}

	docs := e.all("logs")
	if len(docs) < 5 {
		t.Fatalf("%d buckets; the test needs 5", len(docs))
	}
	id := func(i int) string { return docs[i].Lookup("_id").StringValue() }
	update := func(i int, u bson.D) {
		t.Helper()
		if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id(i)}}, u); err != nil {
			t.Fatal(err)
		}
	}
	// 0: the count is off by one.
	update(0, bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: 1}}}})
	// 1: an entry moved outside the window.
	end := docs[1].Lookup("end").Time()
	update(1, bson.D{{Key: "$set", Value: bson.D{{Key: "logs.0.ts", Value: end.Add(time.Hour)}}}})
	// 2: the first write of bucket 2 applied again into bucket 3 (entries,
	// op element and count together, as a repeated write would).
	first := mustValues(t, docs[2].Lookup("ops"))[0].Int32()
	n := int(uint32(first) & 0xf)
	var again bson.A
	for _, v := range mustValues(t, docs[2].Lookup("logs"))[:n] {
		again = append(again, v.Document())
	}
	update(3, bson.D{{Key: "$push", Value: bson.D{{Key: "logs", Value: bson.D{{Key: "$each", Value: again}}}, {Key: "ops", Value: first}}},
		{Key: "$inc", Value: bson.D{{Key: "count", Value: n}}}})
	// 4: stats and counts that do not match the entries.
	update(4, bson.D{{Key: "$inc", Value: bson.D{{Key: "stats.cost.sum", Value: 1}, {Key: "counts.level.info", Value: 1}}}})

	ps, _ := run()
	has := func(docs []string, what, other string) {
		t.Helper()
		for _, p := range ps {
			for _, d := range docs {
				if p.Doc == d && strings.Contains(p.What, what) && strings.Contains(p.What, other) {
					return
				}
			}
		}
		t.Errorf("no problem %q on %v; reported:\n%s", what, docs, problems(ps))
	}
	has([]string{id(0)}, "count ", "")
	has([]string{id(1)}, "lies outside the window", "")
	// The repeated write is reported in whichever bucket is read second,
	// naming the first.
	has([]string{id(2), id(3)}, "a write applied twice", "")
	has([]string{id(2), id(3)}, "has seq", "as entry")
	has([]string{id(4)}, "stats.cost is", "")
	has([]string{id(4)}, "counts.level.info is", "")
	for _, p := range ps {
		if d := p.Doc; d != id(0) && d != id(1) && d != id(2) && d != id(3) && d != id(4) {
			t.Errorf("problem reported on a sound bucket: %v", p)
		}
	}
}

func problems(ps []mongolog.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}
