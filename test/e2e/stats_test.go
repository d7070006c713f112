package e2e

import (
	"bytes"
	"context"
	"slices"
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
	if err := mongolog.PrintStats(&out, windows, time.Minute, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "records per 1m,") || !strings.Contains(out.String(), "level debug:") {
		t.Errorf("printed stats:\n%s", out.String())
	}
}

// A step finer than the bucket window, or not a whole number of windows,
// is refused with both values named (by the command too, exit 2); the
// chart is drawn by time, a step without records at 0, not a slope
// between the steps that have some.
func TestStatsStepAndGaps(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "module", "bucket_window", "1m"}
	in, _, log := monitored(t, e, props...)
	base := time.Now().UTC().Truncate(time.Hour).Add(-6 * time.Hour)
	var recs [][]byte
	for i, at := range []time.Time{base, base.Add(time.Minute), base.Add(3 * time.Hour), base.Add(4 * time.Hour)} {
		for j := 0; j <= i; j++ { // 1, 2, 3 and 4 records
			recs = append(recs, record(t, at.Add(time.Duration(j)*time.Second), kv{"module", "pay"}))
		}
	}
	mustDone(t, in.Flush("app.log", join(recs)), log)
	in.Exit()
	r := reader(t, e, props...)
	for step, want := range map[time.Duration][]string{
		30 * time.Second: {"--step 30s", "cannot be finer than the bucket window", "bucket_window 1m"},
		90 * time.Second: {"--step 1m30s", "whole number of bucket windows", "bucket_window 1m", "--step 2m"},
	} {
		if _, err := r.Stats(context.Background(), mongolog.Query{}, step); err == nil || !containsAll(err.Error(), want) {
			t.Errorf("step %v: %v, want a refusal saying %q", step, err, want)
		}
	}
	out, errOut, code := runMongolog(t, "", nil, append([]string{"stats", "--step", "30s", "--bucket_key", "module", "--bucket_window", "1m"}, e.target("logs")...)...)
	if code != 2 || out != "" || !containsAll(errOut, []string{"--step 30s", "bucket_window 1m"}) {
		t.Errorf("stats --step 30s: exit %d, stdout %q, stderr %q; want exit 2 and the refusal only", code, out, errOut)
	}

	windows, err := r.Stats(context.Background(), mongolog.Query{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, w := range windows {
		got = append(got, w.Records)
	}
	if len(windows) != 3 || !slices.Equal(got, []int64{3, 3, 4}) || !windows[0].Start.Equal(base) {
		t.Fatalf("per hour: %d windows, records %v; want 3, 3, 4 from %v", len(windows), got, base)
	}
	series, err := mongolog.StatsSeries(windows, time.Hour)
	if err != nil || !slices.Equal(series, []float64{3, 0, 0, 3, 4}) {
		t.Errorf("chart series per hour %v, %v; want 3 0 0 3 4 (the empty hours at 0)", series, err)
	}
	var printed bytes.Buffer
	if err := mongolog.PrintStats(&printed, windows, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(printed.String(), "records per 1h, ") || !strings.Contains(printed.String(), "2 steps without records drawn at 0") {
		t.Errorf("printed stats:\n%s", printed.String())
	}
	out, errOut, code = runMongolog(t, "", nil, append([]string{"stats", "--step", "1h", "--bucket_key", "module"}, e.target("logs")...)...)
	if code != 0 || !strings.Contains(out, "2 steps without records drawn at 0") {
		t.Errorf("stats --step 1h: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
