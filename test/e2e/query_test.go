package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// matches evaluates c on a record the way the server does: = and != match
// a number or its text, comparisons take numbers only, ~ strings only; a
// missing field is != anything.
func matches(t *testing.T, rec bson.Raw, c mongolog.Cond) bool {
	v, err := rec.LookupErr(strings.Split(c.Field, ".")...)
	num, isNum := 0.0, false
	if err == nil {
		if f, ok := v.AsFloat64OK(); ok && v.Type != bson.TypeBoolean {
			num, isNum = f, true
		}
	}
	str, isStr := "", false
	if err == nil {
		str, isStr = v.StringValueOK()
	}
	want, wantErr := strconv.ParseFloat(c.Value, 64)
	eq := isStr && str == c.Value || isNum && wantErr == nil && num == want
	switch c.Op {
	case "=":
		return eq
	case "!=":
		return !eq
	case "~":
		return isStr && regexp.MustCompile(c.Value).MatchString(str)
	case ">":
		return isNum && num > want
	case ">=":
		return isNum && num >= want
	case "<":
		return isNum && num < want
	case "<=":
		return isNum && num <= want
	}
	t.Fatalf("op %s", c.Op)
	return false
}

// query returns exactly the records a scan of every stored entry returns,
// in time order, for a table of filters: key fields (pushed down to the
// buckets), time ranges, field conditions, limits, across two day
// partitions; in bucket and flat mode.
func TestQueryMatchesAScan(t *testing.T) {
	day2 := time.Date(2099, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			props := []string{"mode", mode, "partition", "day", "time_key", "ts"}
			if mode == "bucket" {
				props = append(props, "bucket_key", "host,svc.name", "bucket_max_records", "25")
			}
			in, _, log := monitored(t, e, props...)
			var recs [][]byte
			for i := 0; i < 240; i++ {
				at := day2.Add(-2 * time.Minute).Add(time.Duration(i) * time.Second) // over midnight
				var cost any = i * 7 % 1000
				if i%10 == 0 {
					cost = strconv.Itoa(i) // a number as text
				}
				recs = append(recs, record(t, at, kv{"i", i}, kv{"host", fmt.Sprintf("h%d", i%3)},
					kv{"svc", map[string]any{"name": []string{"pay", "auth"}[i%2]}}, kv{"level", []string{"info", "error", "debug", "warn"}[i%4]},
					kv{"cost", cost}, kv{"path", []string{"/api/v1/x", "/health", "/api/v2/y"}[i%3]}))
			}
			mustDone(t, in.Flush("app.log", join(recs)), log)
			in.Exit()
			r := reader(t, e, props...)
			colls, err := r.Collections(context.Background(), time.Time{}, time.Time{})
			if err != nil || !slices.Equal(colls, []string{"logs_20990101", "logs_20990102"}) {
				t.Fatalf("collections %v, %v", colls, err)
			}
			var all []bson.Raw // every stored record
			for _, c := range colls {
				for _, d := range e.all(c) {
					if mode == "flat" {
						all = append(all, d)
						continue
					}
					for _, v := range mustValues(t, d.Lookup("logs")) {
						all = append(all, v.Document())
					}
				}
			}
			if len(all) != 240 {
				t.Fatalf("%d records stored, want 240", len(all))
			}
			slices.SortFunc(all, func(a, b bson.Raw) int { return a.Lookup("ts").Time().Compare(b.Lookup("ts").Time()) })
			cases := []struct {
				conds    []string
				from, to time.Time
				limit    int
			}{
				{conds: nil},
				{conds: []string{"host=h1"}},
				{conds: []string{"host=h1", "svc.name=pay"}},
				{conds: []string{"host~^h[02]$"}},
				{conds: []string{"level=error"}},
				{conds: []string{"level!=info", "cost>500"}},
				{conds: []string{"cost>=990"}},
				{conds: []string{"cost<=7"}},
				{conds: []string{"cost=30"}}, // the text "30"
				{conds: []string{"cost<100", "cost>20"}},
				{conds: []string{"path~^/api"}},
				{conds: []string{"host=h2"}, from: day2.Add(-30 * time.Second), to: day2.Add(30 * time.Second)},
				{from: day2},
				{to: day2},
				{conds: []string{"level=warn"}, from: day2.Add(-time.Minute), limit: 5},
				{limit: 7},
				{conds: []string{"host=nope"}},
			}
			for _, c := range cases {
				q := mongolog.Query{From: c.from, To: c.to, Limit: c.limit}
				for _, s := range c.conds {
					cond, err := mongolog.ParseCond(s)
					if err != nil {
						t.Fatal(err)
					}
					q.Conds = append(q.Conds, cond)
				}
				var want []int64
				for _, rec := range all {
					ts := rec.Lookup("ts").Time()
					ok := (c.from.IsZero() || !ts.Before(c.from)) && (c.to.IsZero() || ts.Before(c.to))
					for _, cond := range q.Conds {
						ok = ok && matches(t, rec, cond)
					}
					if ok && (c.limit == 0 || len(want) < c.limit) {
						want = append(want, rec.Lookup("i").AsInt64())
					}
				}
				var got []int64
				if err := r.Query(context.Background(), q, func(rec bson.Raw) error {
					got = append(got, rec.Lookup("i").AsInt64())
					return nil
				}); err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%v from %v to %v limit %d:\n got %v\nwant %v", c.conds, c.from, c.to, c.limit, got, want)
				}
			}
			// A misspelt field is named, with the fields the records have.
			typo, _ := mongolog.ParseCond("levle=error")
			known, _ := mongolog.ParseCond("svc.name=pay")
			unknown, seen, err := r.UnknownFields(context.Background(), mongolog.Query{Conds: []mongolog.Cond{typo, known}})
			if err != nil || !slices.Equal(unknown, []string{"levle"}) || !slices.Contains(seen, "level") {
				t.Errorf("unknown fields %v (seen %v, %v), want levle", unknown, seen, err)
			}
		})
	}
}

// Follow prints the records stored, then each new one once as it lands.
func TestQueryFollow(t *testing.T) {
	e := newDBEnv(t)
	in, _, log := monitored(t, e, "bucket_key", "host")
	now := time.Now().UTC()
	batch := func(from, n int) []byte {
		var recs [][]byte
		for i := from; i < from+n; i++ {
			recs = append(recs, record(t, now.Add(time.Duration(i)*time.Millisecond), kv{"i", i}, kv{"host", "a"}))
		}
		return join(recs)
	}
	mustDone(t, in.Flush("app.log", batch(0, 10)), log)
	r := reader(t, e, "bucket_key", "host")
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan int64, 100)
	done := make(chan error, 1)
	go func() {
		done <- r.Follow(ctx, mongolog.Query{From: now.Add(-time.Minute)}, 50*time.Millisecond, time.Minute, func(rec bson.Raw) error {
			got <- rec.Lookup("i").AsInt64()
			return nil
		})
	}()
	var seen []int64
	waitFor(t, "the first 10 records", func() bool {
		for len(got) > 0 {
			seen = append(seen, <-got)
		}
		return len(seen) >= 10
	})
	mustDone(t, in.Flush("app.log", batch(10, 5)), log)
	waitFor(t, "the 5 new records", func() bool {
		for len(got) > 0 {
			seen = append(seen, <-got)
		}
		return len(seen) >= 15
	})
	time.Sleep(200 * time.Millisecond) // a few more polls: nothing is printed twice
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for len(got) > 0 {
		seen = append(seen, <-got)
	}
	want := make([]int64, 15)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("followed %v, want %v", seen, want)
	}
	in.Exit()
}

// Follow is lossless and prints nothing twice when writes land out of time
// order, through the real plugin: a newer bucket is written first, then
// older records into other buckets and into the bucket already printed,
// each within the lag; identical records are each printed once. A record
// landing more than the lag behind the newest printed is not followed
// (query finds it), and the follower forgets positions older than the lag.
func TestQueryFollowOutOfOrder(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			const lag = 10 * time.Second
			e := newEnv(t)
			dir := t.TempDir()
			props := []string{"mode", mode}
			if mode == "bucket" {
				props = append(props, "bucket_key", "module")
			}
			e.init("a", e.props(props...))
			t.Cleanup(func() { e.exit("a") })
			base := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Minute) // base+0s..59s: one window
			n := 0
			flush := func(recs ...[]byte) {
				n++
				e.mustFlush("a", "app", chunkFile(t, dir, fmt.Sprint("chunk", n), recs...))
			}
			rec := func(at time.Duration, module, id string) []byte {
				return record(t, base.Add(at), kv{"module", module}, kv{"id", id})
			}
			var got []string
			var times []time.Time
			r := reader(t, e, props...)
			f := r.Follower(mongolog.Query{From: base.Add(-time.Hour)}, lag, func(rec bson.Raw) error {
				got = append(got, rec.Lookup("id").StringValue())
				times = append(times, rec.Lookup("ts").Time())
				return nil
			})
			poll := func(want ...string) {
				t.Helper()
				got, times = nil, nil
				if err := f.Poll(context.Background()); err != nil {
					t.Fatal(err)
				}
				if !slices.IsSortedFunc(times, func(a, b time.Time) int { return a.Compare(b) }) {
					t.Errorf("a poll printed out of time order: %v", times)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("poll printed %v, want %v", got, want)
				}
			}
			var newest, older []string
			var recs [][]byte
			for i := 0; i < 10; i++ { // the newest first: module m3
				id := fmt.Sprint("m3-", i)
				newest = append(newest, id)
				recs = append(recs, rec(30*time.Second+time.Duration(i)*time.Millisecond, "m3", id))
			}
			flush(recs...)
			poll(newest...)
			recs = nil
			for m := 0; m < 3; m++ { // then older records of three other modules
				for i := 0; i < 10; i++ {
					id := fmt.Sprint("m", m, "-", i)
					older = append(older, id)
					recs = append(recs, rec(25*time.Second+time.Duration(10*m+i)*time.Millisecond, fmt.Sprint("m", m), id))
				}
			}
			twin := rec(26*time.Second, "m0", "twin") // two identical records
			recs = append(recs, twin, twin)
			older = append(older, "twin", "twin")
			flush(recs...)
			poll(older...)
			// An older record into the bucket printed first.
			flush(rec(29*time.Second, "m3", "m3-older"))
			poll("m3-older")
			poll()
			poll()
			// A record more than the lag behind the newest printed lands:
			// follow does not print it; query finds it.
			flush(rec(30*time.Second-10*lag, "m1", "late"))
			poll()
			found := 0
			if err := r.Query(context.Background(), mongolog.Query{Conds: []mongolog.Cond{{Field: "id", Op: "=", Value: "late"}}}, func(bson.Raw) error {
				found++
				return nil
			}); err != nil || found != 1 {
				t.Fatalf("query found the late record %d times, %v", found, err)
			}
			flush(rec(31*time.Second, "m2", "next"), twin)
			poll("next", "twin")
			poll()
			// Remembered: the records of the last lag behind the newest
			// (31s): all but the late one, which was never printed.
			if got, want := f.Remembered(), 10+30+1+1+1; mode == "flat" && got != want+2 || mode == "bucket" && got != want {
				t.Errorf("the follower remembers %d positions, want those of the last %v", got, lag)
			}
			// Later records move the overlap on: the older positions go.
			flush(rec(31*time.Second+2*lag, "m2", "later"))
			poll("later")
			poll()
			if f.Remembered() != 1 {
				t.Errorf("the follower remembers %d positions after the overlap moved on, want 1", f.Remembered())
			}
		})
	}
}

// A record stamped in the future does not hide the present from follow:
// the overlap is the lag behind the current time when that is earlier
// than the newest record printed.
func TestQueryFollowFutureRecord(t *testing.T) {
	const lag = 10 * time.Second
	e := newEnv(t)
	dir := t.TempDir()
	e.init("a", e.props("bucket_key", "module"))
	t.Cleanup(func() { e.exit("a") })
	var got []string
	r := reader(t, e, "bucket_key", "module")
	f := r.Follower(mongolog.Query{From: time.Now().Add(-time.Hour)}, lag, func(rec bson.Raw) error {
		got = append(got, rec.Lookup("id").StringValue())
		return nil
	})
	poll := func(want ...string) {
		t.Helper()
		got = nil
		if err := f.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("poll printed %v, want %v", got, want)
		}
	}
	e.mustFlush("a", "app", chunkFile(t, dir, "future", record(t, time.Now().Add(time.Hour), kv{"module", "a"}, kv{"id", "future"})))
	poll("future")
	e.mustFlush("a", "app", chunkFile(t, dir, "now", record(t, time.Now().Add(-time.Second), kv{"module", "b"}, kv{"id", "now"})))
	poll("now")
	poll()
}
