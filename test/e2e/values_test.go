package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// checkValues checks that each bucket keeps the distinct values of field
// its entries hold, all of them up to 100, else 100 of them and
// valuesTruncated.<field>.
func checkValues(t *testing.T, docs []bson.Raw, field string) (truncated int) {
	t.Helper()
	for _, d := range docs {
		id := d.Lookup("_id").StringValue()
		inEntries := map[string]bool{}
		for _, v := range mustValues(t, d.Lookup("logs")) {
			inEntries[v.Document().Lookup(field).String()] = true
		}
		kept := map[string]bool{}
		for _, v := range mustValues(t, d.Lookup("values", field)) {
			if kept[v.String()] || !inEntries[v.String()] {
				t.Errorf("bucket %s: value %v kept twice or not in its entries", id, v)
			}
			kept[v.String()] = true
		}
		trunc, _ := d.Lookup("valuesTruncated", field).BooleanOK()
		switch {
		case len(inEntries) <= 100 && (len(kept) != len(inEntries) || trunc):
			t.Errorf("bucket %s: %d values kept (truncated %v), its entries hold %d", id, len(kept), trunc, len(inEntries))
		case len(inEntries) > 100 && (len(kept) != 100 || !trunc):
			t.Errorf("bucket %s: %d values kept (truncated %v) of %d, want 100 and truncated", id, len(kept), trunc, len(inEntries))
		}
		if trunc {
			truncated++
		}
	}
	return truncated
}

// keep_values keeps each bucket's distinct trace ids (at most 100, then
// marked truncated), so that an index on values.traceId (indexes) finds
// the bucket of a trace; the cap holds across a restart of the agent.
func TestKeepValuesAndIndexes(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "module", "keep_values", "traceId", "bucket_max_records", "150",
		"indexes", "values.traceId, logs.level+start:-1"}
	in, cmds, log := monitored(t, e, props...)
	chunk, _ := appSlice(t, 2000)
	mustDone(t, in.Flush("app.log", chunk), log)
	in.Exit()
	docs := e.all("logs")
	if n := checkValues(t, docs, "traceId"); n == 0 || n == len(docs) {
		t.Errorf("%d of %d buckets truncated: the test needs both kinds", n, len(docs))
	}
	var keys []string
	for _, c := range named(cmds.since(0), "createIndexes") {
		for _, v := range mustValues(t, c.body.Lookup("indexes")) {
			keys = append(keys, v.Document().Lookup("key").String())
		}
	}
	for _, want := range []string{`{"values.traceId": {"$numberInt":"1"}}`, `{"logs.level": {"$numberInt":"1"},"start": {"$numberInt":"-1"}}`} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("no index %s created; created %v", want, keys)
		}
	}
	// A trace's bucket through values.traceId.
	trace := mustValues(t, docs[0].Lookup("values", "traceId"))[0]
	var hit bson.M
	if err := e.db.Collection("logs").FindOne(context.Background(), bson.D{{Key: "values.traceId", Value: trace}}).Decode(&hit); err != nil || hit["_id"] != docs[0].Lookup("_id").StringValue() {
		t.Errorf("lookup by trace id %v: %v %v", trace, hit["_id"], err)
	}

	// 60 trace ids from one agent, 60 from a second, which seals the
	// first's bucket (it may have writes in the network) and opens the
	// next, then 60 more from the first: its bucket sealed, it finds the
	// second's, reads the values it holds and keeps 100 in all there.
	e2 := newDBEnv(t)
	at := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := func(from int) []byte {
		var recs [][]byte
		for i := from; i < from+60; i++ {
			recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"module", "m"}, kv{"traceId", fmt.Sprintf("t%03d", i)}))
		}
		return join(recs)
	}
	in1, _, log1 := monitored(t, e2, "bucket_key", "module", "keep_values", "traceId")
	in2, _, log2 := monitored(t, e2, "bucket_key", "module", "keep_values", "traceId")
	mustDone(t, in1.Flush("app.log", batch(0)), log1)
	mustDone(t, in2.Flush("app.log", batch(60)), log2)
	mustDone(t, in1.Flush("app.log", batch(120)), log1)
	in1.Exit()
	in2.Exit()
	docs = e2.all("logs")
	if len(docs) != 2 {
		t.Fatalf("%d buckets, want 2", len(docs))
	}
	if n := len(mustValues(t, docs[1].Lookup("values", "traceId"))); n != writer.MaxValues {
		t.Errorf("the shared bucket keeps %d trace ids, want %d", n, writer.MaxValues)
	}
	if checkValues(t, docs, "traceId") != 1 {
		t.Errorf("160 trace ids for the shared bucket: it is not marked truncated")
	}
}
