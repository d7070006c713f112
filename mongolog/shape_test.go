package mongolog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// oldBucket is a bucket as versions before nested paths stored it, with
// bucket_key kubernetes.pod_name, stats http.latency_ms and count_by
// http.status: their dots replaced by key_replace_dot (_). Its entries
// are at start and start+10s, latencies 300 and 500, statuses 200 and 503.
func oldBucket(id, pod string, start time.Time) bson.D {
	entry := func(at time.Time, latency, status int32) bson.D {
		return bson.D{{Key: "ts", Value: at}, {Key: "kubernetes", Value: bson.D{{Key: "pod_name", Value: pod}}},
			{Key: "http", Value: bson.D{{Key: "latency_ms", Value: latency}, {Key: "status", Value: status}}}, {Key: "msg", Value: "old"}}
	}
	return bson.D{
		{Key: "_id", Value: id + "-0"},
		{Key: "key", Value: bson.D{{Key: "kubernetes_pod_name", Value: pod}}},
		{Key: "start", Value: start}, {Key: "end", Value: start.Add(time.Minute)},
		{Key: "seq", Value: int32(0)}, {Key: "count", Value: int32(2)}, {Key: "bytes", Value: int64(300)},
		{Key: "logs", Value: bson.A{entry(start, 300, 200), entry(start.Add(10*time.Second), 500, 503)}},
		{Key: "minTs", Value: start}, {Key: "maxTs", Value: start.Add(10 * time.Second)},
		{Key: "stats", Value: bson.D{{Key: "http_latency_ms", Value: bson.D{
			{Key: "max", Value: int64(500)}, {Key: "min", Value: int64(300)}, {Key: "n", Value: int64(2)}, {Key: "sum", Value: int64(800)}}}}},
		{Key: "counts", Value: bson.D{{Key: "http_status", Value: bson.D{{Key: "200", Value: int32(1)}, {Key: "503", Value: int32(1)}}}}},
	}
}

// A dotted bucket_key, stats or count_by path is stored as the nested
// fields it names, so plain queries on the paths find it; a collection
// that also holds buckets of an earlier version (the paths as single
// names, dots replaced) reads right through mongolog: query (= and ~),
// stats, verify, export and prune take both shapes.
func TestNestedAndOldShapes(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "bucket_key", "kubernetes.pod_name", "stats", "http.latency_ms", "count_by", "http.status",
		"bucket_window", "1m", "dead_letter_ttl", "0")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	at := day.Add(10 * time.Hour)
	line := func(pod string, latency, status int) string {
		b, _ := json.Marshal(map[string]any{"kubernetes": map[string]any{"pod_name": pod},
			"http": map[string]any{"latency_ms": latency, "status": status}, "msg": "new"})
		return string(b)
	}
	store(t, k, 10,
		rec{at, line("payments-7d9f", 120, 200)}, rec{at.Add(time.Second), line("payments-7d9f", 80, 200)},
		rec{at.Add(2 * time.Second), line("web-1", 900, 500)})
	insert(t, db, "logs", oldBucket("old1", "payments-7d9f", at.Add(time.Minute)), oldBucket("old2", "web-1", at.Add(time.Minute)))
	ctx := context.Background()

	// The new buckets, as a plain driver reads them.
	if n := count(t, db, "logs", bson.D{{Key: "key.kubernetes.pod_name", Value: "payments-7d9f"}}); n != 1 {
		t.Errorf("%d buckets with key.kubernetes.pod_name payments-7d9f, want the new one", n)
	}
	if n := count(t, db, "logs", bson.D{{Key: "key", Value: bson.D{{Key: "kubernetes", Value: bson.D{{Key: "pod_name", Value: "web-1"}}}}}}); n != 1 {
		t.Errorf("%d buckets of the whole key {kubernetes: {pod_name: web-1}}, want 1", n)
	}
	if n := count(t, db, "logs", bson.D{{Key: "counts.http.status.200", Value: 2}, {Key: "stats.http.latency_ms.min", Value: 80}, {Key: "stats.http.latency_ms.max", Value: 120}}); n != 1 {
		t.Errorf("%d buckets with counts.http.status.200 2 and stats.http.latency_ms 80..120, want 1", n)
	}

	r := reader(t, k)
	for _, c := range []Cond{{Field: "kubernetes.pod_name", Op: "=", Value: "payments-7d9f"}, {Field: "kubernetes.pod_name", Op: "~", Value: "^pay"}} {
		var msgs []string
		err := r.Query(ctx, Query{Conds: []Cond{c}}, func(rec bson.Raw) error {
			msgs = append(msgs, rec.Lookup("msg").StringValue())
			return nil
		})
		if err != nil || !slices.Equal(msgs, []string{"new", "new", "old", "old"}) {
			t.Errorf("query %s: %q, %v; want the 2 new records and the 2 old ones", c, msgs, err)
		}
	}

	windows, err := r.Stats(ctx, Query{Conds: []Cond{{Field: "kubernetes.pod_name", Op: "=", Value: "payments-7d9f"}}}, time.Hour)
	if err != nil || len(windows) != 1 {
		t.Fatalf("stats: %+v, %v; want one window", windows, err)
	}
	w := windows[0]
	a := w.Stats["http.latency_ms"]
	if w.Buckets != 2 || w.Records != 4 || a == nil || a.Min != 80 || a.Max != 500 || a.Sum != 1000 || a.N != 4 || len(w.Stats) != 1 {
		t.Errorf("stats: %d buckets, %d records, stats %v (http.latency_ms %+v); want 2, 4, 80..500 sum 1000 of 4", w.Buckets, w.Records, w.Stats, a)
	}
	if got := w.Counts["http.status"]; len(w.Counts) != 1 || got["200"] != 3 || got["503"] != 1 || len(got) != 2 {
		t.Errorf("counts %v; want http.status 200:3 503:1", w.Counts)
	}

	var problems []string
	v, err := r.Verify(ctx, VerifyOptions{}, func(p Problem) { problems = append(problems, p.String()) })
	if err != nil || len(problems) > 0 || v.Docs != 4 || v.Records != 7 {
		t.Errorf("verify: %+v, %v, problems:\n%s", v, err, strings.Join(problems, "\n"))
	}

	// Export writes every bucket's key in the shape the plugin stores.
	dir := t.TempDir()
	res, err := r.Export(ctx, ExportOptions{From: day, To: day.Add(24 * time.Hour), Step: 24 * time.Hour, Dir: dir,
		Conds: []Cond{{Field: "kubernetes.pod_name", Op: "=", Value: "payments-7d9f"}}})
	if err != nil || res.Records != 4 {
		t.Fatalf("export: %+v, %v; want 4 records", res, err)
	}
	files, _ := exported(t, dir)
	var keys []string
	for _, lines := range files {
		for _, l := range lines {
			var v struct{ Key json.RawMessage }
			_ = json.Unmarshal([]byte(l), &v)
			keys = append(keys, string(v.Key))
		}
	}
	if want := `{"kubernetes":{"pod_name":"payments-7d9f"}}`; len(keys) != 4 || slices.ContainsFunc(keys, func(k string) bool { return k != want }) {
		t.Errorf("exported keys %q, want 4 of %s", keys, want)
	}

	// Prune's filter takes both shapes.
	f, err := r.PruneFilter(PruneOptions{Before: day.Add(24 * time.Hour), Conds: []Cond{{Field: "kubernetes.pod_name", Op: "=", Value: "web-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, "logs", f); n != 2 {
		t.Errorf("prune web-1 selects %d buckets, want the new one and the old one", n)
	}
}

// A bucket that holds the stats and counts of a dotted path under both
// names (the old name for its first entries, the nested path for the
// others), as one an earlier version began and this one filled on would
// (with an undotted bucket_key its key and _id are the same in both):
// stats and verify sum the two parts.
func TestBucketHoldingBothShapes(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "bucket_key", "module", "stats", "http.latency_ms", "count_by", "http.status", "bucket_window", "1m")
	start := time.Now().UTC().Truncate(24 * time.Hour).Add(-48*time.Hour + 10*time.Hour)
	d := oldBucket("mixed", "payments-7d9f", start)
	entry := func(at time.Time, latency, status int32) bson.D {
		return bson.D{{Key: "ts", Value: at}, {Key: "module", Value: "pay"},
			{Key: "http", Value: bson.D{{Key: "latency_ms", Value: latency}, {Key: "status", Value: status}}}}
	}
	for i, f := range d {
		switch f.Key {
		case "key":
			d[i].Value = bson.D{{Key: "module", Value: "pay"}}
		case "count":
			d[i].Value = int32(4)
		case "logs":
			logs := f.Value.(bson.A)
			for _, e := range logs {
				e.(bson.D)[1] = bson.E{Key: "module", Value: "pay"}
			}
			d[i].Value = append(logs, entry(start.Add(20*time.Second), 100, 200), entry(start.Add(30*time.Second), 700, 500))
		case "maxTs":
			d[i].Value = start.Add(30 * time.Second)
		case "stats":
			d[i].Value = append(f.Value.(bson.D), bson.E{Key: "http", Value: bson.D{{Key: "latency_ms", Value: bson.D{
				{Key: "max", Value: int64(700)}, {Key: "min", Value: int64(100)}, {Key: "n", Value: int64(2)}, {Key: "sum", Value: int64(800)}}}}})
		case "counts":
			d[i].Value = append(f.Value.(bson.D), bson.E{Key: "http", Value: bson.D{{Key: "status", Value: bson.D{
				{Key: "200", Value: int32(1)}, {Key: "500", Value: int32(1)}}}}})
		}
	}
	insert(t, db, "logs", d)

	r := reader(t, k)
	var problems []string
	v, err := r.Verify(context.Background(), VerifyOptions{}, func(p Problem) { problems = append(problems, p.String()) })
	if err != nil || len(problems) > 0 || v.Records != 4 {
		t.Errorf("verify: %+v, %v, problems:\n%s", v, err, strings.Join(problems, "\n"))
	}
	windows, err := r.Stats(context.Background(), Query{}, time.Hour)
	if err != nil || len(windows) != 1 {
		t.Fatalf("stats: %+v, %v", windows, err)
	}
	a, c := windows[0].Stats["http.latency_ms"], windows[0].Counts["http.status"]
	if a == nil || a.Min != 100 || a.Max != 700 || a.Sum != 1600 || a.N != 4 || c["200"] != 2 || c["500"] != 1 || c["503"] != 1 || len(windows[0].Stats) != 1 {
		t.Errorf("stats %v (%+v), counts %v; want http.latency_ms 100..700 sum 1600 of 4, http.status 200:2 500:1 503:1", windows[0].Stats, a, c)
	}
}
