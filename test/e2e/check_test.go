package e2e

import (
	"math"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// limits are the bounds a bucket must keep.
type limits struct {
	records int
	bytes   int
}

var defaultLimits = limits{records: 1000, bytes: 1 << 20}

// checkBuckets checks every invariant of stored buckets and returns their
// entries: count equals the entries, no bound is exceeded, the time fields
// agree with the entries, and stats and counts equal a recomputation.
func checkBuckets(t *testing.T, docs []bson.Raw, lim limits) []bson.Raw {
	t.Helper()
	var entries []bson.Raw
	ids := map[string]bool{}
	for _, d := range docs {
		id := d.Lookup("_id").StringValue()
		if ids[id] {
			t.Errorf("bucket %s stored twice", id)
		}
		ids[id] = true
		logs, ok := d.Lookup("logs").ArrayOK()
		if !ok {
			t.Fatalf("bucket %s has no logs array: %v", id, d)
		}
		vals, err := logs.Values()
		if err != nil {
			t.Fatal(err)
		}
		count := int(d.Lookup("count").AsInt64())
		if count != len(vals) {
			t.Errorf("bucket %s: count %d, %d entries", id, count, len(vals))
		}
		if count > lim.records {
			t.Errorf("bucket %s: %d entries, over %d", id, count, lim.records)
		}
		if ops, ok := d.Lookup("ops").ArrayOK(); ok {
			// Every write is recorded: the ops elements' entry counts (the
			// low 4 bits) add up to the entries.
			opVals, _ := ops.Values()
			sum := 0
			for _, o := range opVals {
				n := int(uint32(o.Int32()) & 0xf)
				if n == 0 {
					t.Errorf("bucket %s: op element %d records no entries", id, o.Int32())
				}
				sum += n
			}
			if sum != count {
				t.Errorf("bucket %s: its ops record %d entries, it holds %d", id, sum, count)
			}
		}
		if len(d) > lim.bytes {
			t.Errorf("bucket %s: %d bytes, over %d", id, len(d), lim.bytes)
		}
		minTs, maxTs := d.Lookup("minTs").Time(), d.Lookup("maxTs").Time()
		if minTs.After(maxTs) {
			t.Errorf("bucket %s: minTs %v after maxTs %v", id, minTs, maxTs)
		}
		start, hasWindow := d.Lookup("start").TimeOK()
		end, _ := d.Lookup("end").TimeOK()
		var lo, hi time.Time
		for i, v := range vals {
			e := v.Document()
			ts, ok := e.Lookup("ts").TimeOK()
			if !ok {
				t.Fatalf("bucket %s entry %d: ts is not a date: %v", id, i, e)
			}
			if hasWindow && (ts.Before(start) || !ts.Before(end)) {
				t.Errorf("bucket %s entry %d: ts %v outside [%v, %v)", id, i, ts, start, end)
			}
			if i == 0 || ts.Before(lo) {
				lo = ts
			}
			if i == 0 || ts.After(hi) {
				hi = ts
			}
			entries = append(entries, e)
		}
		if len(vals) > 0 && (!lo.Equal(minTs) || !hi.Equal(maxTs)) {
			t.Errorf("bucket %s: minTs/maxTs %v/%v, entries span %v/%v", id, minTs, maxTs, lo, hi)
		}
		checkStats(t, id, d, vals)
		checkCounts(t, id, d, vals)
	}
	return entries
}

// checkStats recomputes stats.<field>.{min,max,sum,n} from the entries.
func checkStats(t *testing.T, id string, d bson.Raw, vals []bson.RawValue) {
	t.Helper()
	stats, ok := d.Lookup("stats").DocumentOK()
	if !ok {
		return
	}
	elems, _ := stats.Elements()
	for _, el := range elems {
		field := el.Key()
		mn, mx, sum, n := math.Inf(1), math.Inf(-1), 0.0, 0
		for _, v := range vals {
			f, ok := number(v.Document().Lookup(field))
			if !ok {
				continue
			}
			mn, mx, sum, n = math.Min(mn, f), math.Max(mx, f), sum+f, n+1
		}
		s := el.Value().Document()
		got := [4]float64{}
		for i, k := range []string{"min", "max", "sum", "n"} {
			got[i], _ = number(s.Lookup(k))
		}
		if n == 0 || got != [4]float64{mn, mx, sum, float64(n)} {
			t.Errorf("bucket %s: stats.%s = %v, entries give min %v max %v sum %v n %d", id, field, got, mn, mx, sum, n)
		}
	}
}

// checkCounts recomputes counts.<field>.<value> from the entries.
func checkCounts(t *testing.T, id string, d bson.Raw, vals []bson.RawValue) {
	t.Helper()
	counts, ok := d.Lookup("counts").DocumentOK()
	if !ok {
		return
	}
	fields, _ := counts.Elements()
	for _, f := range fields {
		want := map[string]int64{}
		for _, v := range vals {
			want[countedName(v.Document().Lookup(f.Key()))]++
		}
		byValue, _ := f.Value().Document().Elements()
		got := map[string]int64{}
		for _, c := range byValue {
			got[c.Key()] = c.Value().AsInt64()
		}
		if len(got) != len(want) {
			t.Errorf("bucket %s: counts.%s = %v, entries give %v", id, f.Key(), got, want)
			continue
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("bucket %s: counts.%s.%s = %d, entries give %d", id, f.Key(), k, got[k], n)
			}
		}
	}
}

// countedName is the name a counted value is filed under: strings as they
// are, integers, doubles and booleans as text, anything else (missing,
// null) as its type name.
func countedName(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	}
	return "null"
}

func number(v bson.RawValue) (float64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return float64(v.Int32()), true
	case bson.TypeInt64:
		return float64(v.Int64()), true
	case bson.TypeDouble:
		return v.Double(), true
	}
	return 0, false
}

// seqs checks that the app-log entries carry each seq 0..n-1 exactly once.
func checkSeqs(t *testing.T, entries []bson.Raw, n int) {
	t.Helper()
	seen := make([]int, n)
	for _, e := range entries {
		s, ok := e.Lookup("seq").AsInt64OK()
		if !ok || s < 0 || int(s) >= n {
			t.Fatalf("entry without a valid seq: %v", e)
		}
		seen[s]++
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("seq %d stored %d times", i, c)
		}
	}
}
