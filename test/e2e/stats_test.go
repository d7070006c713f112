package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// stats, from bucket fields alone, matches what the entries give per
// window: records, counts per value, min and max, and exact averages.
func TestStatsMatchTheEntries(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "module", "stats", "cost", "count_by", "level"}
	in, _, log := monitored(t, e, props...)
	mustDone(t, in.Flush("app.log", readFixture(t, "chunk-app-json-5000.msgpack")), log)
	in.Exit()

	type want struct {
		records, n    int64
		sum, min, max float64
		levels        map[string]int64
	}
	per := map[time.Time]*want{}
	for _, d := range e.all("logs") {
		start := d.Lookup("start").Time().UTC()
		w := per[start]
		if w == nil {
			w = &want{min: 1e18, max: -1e18, levels: map[string]int64{}}
			per[start] = w
		}
		for _, v := range mustValues(t, d.Lookup("logs")) {
			entry := v.Document()
			w.records++
			w.levels[entry.Lookup("level").StringValue()]++
			if c, ok := entry.Lookup("cost").AsFloat64OK(); ok && entry.Lookup("cost").Type != bson.TypeString {
				w.n++
				w.sum += c
				w.min, w.max = min(w.min, c), max(w.max, c)
			}
		}
	}
	r := reader(t, e, props...)
	windows, err := r.Stats(context.Background(), mongolog.Query{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(windows) != len(per) || len(windows) < 2 {
		t.Fatalf("%d windows, the entries span %d", len(windows), len(per))
	}
	for _, w := range windows {
		exp := per[w.Start]
		if exp == nil {
			t.Fatalf("window %v holds no entries", w.Start)
		}
		a := w.Stats["cost"]
		if w.Records != exp.records || a == nil || a.N != exp.n || a.Min != exp.min || a.Max != exp.max || a.Avg() != exp.sum/float64(exp.n) {
			t.Errorf("window %v: records %d, cost %+v (avg %v); entries give %d records, n %d min %v max %v avg %v",
				w.Start, w.Records, a, a.Avg(), exp.records, exp.n, exp.min, exp.max, exp.sum/float64(exp.n))
		}
		for level, n := range exp.levels {
			if w.Counts["level"][level] != n {
				t.Errorf("window %v: level %s counted %d, entries give %d", w.Start, level, w.Counts["level"][level], n)
			}
		}
	}
	// One module, summed per hour.
	module := e.all("logs")[0].Lookup("key", "module").StringValue()
	one, err := r.Stats(context.Background(), mongolog.Query{Conds: []mongolog.Cond{{Field: "module", Op: "=", Value: module}}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, w := range one {
		total += w.Records
	}
	pay := 0
	for _, d := range e.all("logs") {
		if d.Lookup("key", "module").StringValue() == module {
			pay += int(d.Lookup("count").AsInt64())
		}
	}
	if total != int64(pay) || pay == 0 {
		t.Errorf("module %s: %d records per hour in all, the buckets hold %d", module, total, pay)
	}
	if _, err := r.Stats(context.Background(), mongolog.Query{Conds: []mongolog.Cond{{Field: "level", Op: "=", Value: "error"}}}, 0); err == nil ||
		!strings.Contains(err.Error(), "not a bucket_key field") {
		t.Errorf("a condition on an entry field: %v, want a refusal naming bucket_key", err)
	}
	var out bytes.Buffer
	if err := mongolog.PrintStats(&out, windows, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "records per window") || !strings.Contains(out.String(), "level debug:") {
		t.Errorf("printed stats:\n%s", out.String())
	}
}
