package e2e

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// days builds a chunk with n records on each of the given UTC days.
func days(t *testing.T, n int, ds ...time.Time) string {
	var recs [][]byte
	for _, d := range ds {
		for i := 0; i < n; i++ {
			recs = append(recs, record(t, d.Add(time.Duration(i)*time.Second), kv{"msg", "hello"}, kv{"i", i}))
		}
	}
	return writeFile(t, "days.msgpack", join(recs))
}

func (e *env) collections() []string {
	e.t.Helper()
	names, err := e.db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// partition day writes each day to its own collection; partition_keep 3
// keeps today and the two days before, counted from the clock: an old
// partition is dropped whole, records older than the kept range are parked
// (not written into a partition about to go), and records from the future
// (a skewed clock, a bad time_from_log) are stored and move nothing.
func TestPartitionsAndRetention(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			today := time.Now().UTC().Truncate(24 * time.Hour)
			name := func(d time.Time) string { return "logs_" + d.Format("20060102") }
			// A partition an earlier run wrote, from before the kept range.
			stale := today.AddDate(0, 0, -5)
			if _, err := e.db.Collection(name(stale)).InsertOne(context.Background(), bson.D{{Key: "seq", Value: 0}}); err != nil {
				t.Fatal(err)
			}
			e.init("p", e.props("mode", mode, "partition", "day", "partition_keep", "3"))
			kept, future, old := today.AddDate(0, 0, -2), time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), today.AddDate(0, 0, -10)
			e.mustFlush("p", "app", days(t, 10, kept, today, future, future.AddDate(0, 0, 1), old))
			e.mustFlush("p", "app", days(t, 5, today.Add(time.Hour)))
			e.exit("p")
			if now := time.Now().UTC().Truncate(24 * time.Hour); !now.Equal(today) {
				t.Skip("the UTC day changed during the test; the kept range moved with it")
			}
			want := []string{"logs_20990101", "logs_20990102", name(kept), name(today), "logs_dead"}
			slices.Sort(want)
			if got := e.collections(); !slices.Equal(got, want) {
				t.Fatalf("collections %v, want %v", got, want)
			}
			for c, n := range map[string]int{name(kept): 10, name(today): 15, "logs_20990101": 10, "logs_20990102": 10} {
				if got := e.records(c, mode); got != n {
					t.Errorf("%s holds %d records, want %d", c, got, n)
				}
			}
			dead := e.all("logs_dead")
			if len(dead) != 10 {
				t.Fatalf("%d records parked, want the 10 older than the kept range", len(dead))
			}
			for _, d := range dead {
				ts, _ := d.Lookup("ts").TimeOK()
				if !ts.Before(kept) || !strings.Contains(d.Lookup("reason").StringValue(), "older than the partitions kept") {
					t.Errorf("parked record at %v: %s", ts, d.Lookup("reason"))
				}
			}
			if !waitLog(e.host, "dropped partition "+name(stale)) {
				t.Errorf("the drop was not logged:\n%s", e.host.Stderr())
			}
		})
	}
}

// records counts the records stored in coll.
func (e *env) records(coll, mode string) int {
	n := 0
	for _, d := range e.all(coll) {
		if mode == "flat" {
			n++
		} else {
			n += int(d.Lookup("count").AsInt64())
		}
	}
	return n
}

// ttl gives every bucket and flat document an expireAt of its window end
// (bucket) or time (flat) plus a jitter below ttl_jitter, and asks for a TTL
// index on it that deletes it ttl later.
func TestTTL(t *testing.T) {
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.init("t", e.props("mode", mode, "ttl", "1h", "ttl_jitter", "10m"))
			e.mustFlush("t", "app.log", fixture("chunk-app-json-5000.msgpack"))
			e.exit("t")
			jitters := map[time.Duration]bool{}
			for _, d := range e.all("logs") {
				at, ok := d.Lookup("expireAt").TimeOK()
				if !ok {
					t.Fatalf("no expireAt in %v", d.Lookup("_id"))
				}
				// A bucket expires after its window's end, a flat document
				// after its own time (both stored in milliseconds).
				base, ok := d.Lookup("end").TimeOK()
				if mode == "flat" {
					base, ok = d.Lookup("ts").TimeOK()
				}
				if !ok {
					t.Fatalf("no end or ts in %v", d.Lookup("_id"))
				}
				j := at.Sub(base)
				if j < 0 || j >= 10*time.Minute {
					t.Fatalf("expireAt %v is %v past %v, want under 10m", at, j, base)
				}
				jitters[j] = true
			}
			if len(jitters) < 2 {
				t.Errorf("all documents share one jitter: deletes would spike together")
			}
			idx := e.indexes("logs")
			if !idx["expireAt_1"] && !waitLog(e.host, "creating TTL index {expireAt: 1} (expireAfterSeconds 3600) on logs") {
				t.Errorf("no TTL index and no warning about it; indexes %v", idx)
			}
		})
	}
}

// indexes returns the index names of coll.
func (e *env) indexes(coll string) map[string]bool {
	e.t.Helper()
	specs, err := e.db.Collection(coll).Indexes().ListSpecifications(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range specs {
		out[s.Name] = true
	}
	return out
}

// The plugin creates the lookup index its buckets are queried by.
func TestLookupIndex(t *testing.T) {
	e := newEnv(t)
	e.init("i", e.props())
	e.mustFlush("i", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.exit("i")
	if idx := e.indexes("logs"); !idx["key_1_start_1"] {
		t.Errorf("indexes %v, want key_1_start_1", idx)
	}
}

// capped_size (flat mode) creates the collection capped before writing. A
// server that accepts the capped create and ignores it (listCollections
// shows the collection uncapped) gets one warning: never a silent success.
func TestCappedFlat(t *testing.T) {
	e := newEnv(t)
	e.init("c", e.props("mode", "flat", "capped_size", "64M"))
	e.mustFlush("c", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.exit("c")
	specs, err := e.db.ListCollectionSpecifications(context.Background(), bson.D{{Key: "name", Value: "logs"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("collection specs %v, %v", specs, err)
	}
	const uncapped = "the server created capped collection logs uncapped: it grows without bound"
	if capped, _ := specs[0].Options.Lookup("capped").BooleanOK(); capped {
		if size := specs[0].Options.Lookup("size").AsInt64(); size < 64<<20 {
			t.Errorf("logs is capped at %d bytes, want 64M", size)
		}
		if strings.Contains(e.host.Stderr(), uncapped) {
			t.Errorf("logs is capped, and a warning says it is not:\n%s", e.host.Stderr())
		}
	} else if !waitLog(e.host, uncapped) || strings.Count(e.host.Stderr(), uncapped) != 1 {
		t.Errorf("the server ignored capped_size (options %v): want one warning saying so:\n%s", specs[0].Options, e.host.Stderr())
	}
	if n := len(e.all("logs")); n != 5000 {
		t.Errorf("%d documents, want 5000", n)
	}
}

// capped_size on a collection that exists already uncapped (created
// before capped_size was set) gets one warning at start naming the
// collection, that it is not capped, and what to do; the plugin leaves it
// as it is and writes every record. A collection the plugin created capped
// gets no such warning at the next start.
func TestCappedSizeOnUncappedCollection(t *testing.T) {
	e := newDBEnv(t)
	ctx := context.Background()
	if err := e.db.CreateCollection(ctx, "logs"); err != nil {
		t.Fatal(err)
	}
	const existing = "capped_size: collection logs exists already and is not capped"
	in, _, log := monitored(t, e, "mode", "flat", "capped_size", "1M")
	mustDone(t, in.Flush("app.log", recent(t, 50, "a")), log)
	mustDone(t, in.Flush("app.log", recent(t, 50, "a")), log)
	in.Exit()
	warn := regexp.MustCompile(`\[ warn\] .*`+regexp.QuoteMeta(existing)+`.*`).FindAllString(log.String(), -1)
	if len(warn) != 1 || !strings.Contains(warn[0], `convertToCapped: "logs", size: 1048576`) || !strings.Contains(warn[0], "set collection to a new name") {
		t.Errorf("want one warning naming logs, not capped, convertToCapped or a new collection:\n%s", log)
	}
	if strings.Contains(log.String(), "the server created capped collection logs") {
		t.Errorf("logs existed before the start, and a warning says the server created it:\n%s", log)
	}
	if capped := cappedOf(t, e, "logs"); capped {
		t.Errorf("the plugin converted logs to capped: it must leave an existing collection as it is")
	}
	if n := len(e.all("logs")); n != 100 {
		t.Errorf("%d documents, want 100", n)
	}

	// Created by the plugin: capped where the server caps, and then no
	// warning at the next start (a server that drops capped gets both).
	first, _, log := monitored(t, e, "mode", "flat", "capped_size", "1M", "collection", "fresh")
	mustDone(t, first.Flush("app.log", recent(t, 10, "a")), log)
	first.Exit()
	again, _, log := monitored(t, e, "mode", "flat", "capped_size", "1M", "collection", "fresh")
	mustDone(t, again.Flush("app.log", recent(t, 10, "a")), log)
	again.Exit()
	const fresh = "capped_size: collection fresh exists already and is not capped"
	if got := strings.Count(log.String(), fresh); cappedOf(t, e, "fresh") && got != 0 {
		t.Errorf("fresh was created capped, and the next start warns it is not:\n%s", log)
	} else if !cappedOf(t, e, "fresh") && got != 1 {
		t.Errorf("the server created fresh uncapped: want one warning at the next start, got %d:\n%s", got, log)
	}
}

// cappedOf reports whether listCollections shows coll capped.
func cappedOf(t *testing.T, e *env, coll string) bool {
	t.Helper()
	specs, err := e.db.ListCollectionSpecifications(context.Background(), bson.D{{Key: "name", Value: coll}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("collection specs of %s: %v, %v", coll, specs, err)
	}
	capped, _ := specs[0].Options.Lookup("capped").BooleanOK()
	return capped
}
