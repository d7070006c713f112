package e2e

// Faults injected below an in-process sink (the plugin's core) through a
// Store wrapper, against the test server: a chunk interrupted half-way and
// resent, by the same sink or by a new one after a "restart", and single
// faults a flush must ride out.

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// appSlice is the first n records of the app fixture as a chunk, with the
// entries they must become.
func appSlice(t *testing.T, n int) ([]byte, [][]byte) {
	t.Helper()
	recs := chunkRecords(t, fixture("chunk-app-json-5000.msgpack"))[:n]
	return join(recs), recs
}

// A chunk whose flush is cut off after some bucket writes (the server
// becomes unreachable at the failAt-th upsert) is given back for a retry
// with part of it stored; sent again, by the same sink or by a new one on
// the same database (a restarted agent: nothing in memory, only the ops
// recorded in the buckets), it ends stored exactly once. In the "applied"
// cases the cut-off write reached the server but its reply was lost.
func TestFaultsInterruptedChunkResent(t *testing.T) {
	const n, perBucket, failAt = 1000, 100, 4
	chunk, _ := appSlice(t, n)
	want := decodeFixture(t, chunk, parser.Options{})
	lim := limits{perBucket, 64 << 10}
	cases := []struct {
		name    string
		err     error
		apply   bool
		restart bool
	}{
		{"network", errNetwork, false, false},
		{"timeout-applied", errTimeout, true, false},
		{"network-applied", errNetwork, true, false},
		{"network-restart", errNetwork, false, true},
		{"timeout-applied-restart", errTimeout, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			opt.FlushTimeout = 500 * time.Millisecond
			fs := &faultStore{Store: e.store(), failAt: failAt, err: c.err, apply: c.apply, down: true}
			s := e.newSink(opt, fs, fastRetry)
			res := flushSink(t, s, "app.log", chunk, sink.Retry)
			if res.Err == nil {
				t.Errorf("retry without an error")
			}
			// The app records are 29 ms apart: the first 1000 share one
			// window, so the group is written 100 records at a time, in order.
			partial := checkBuckets(t, e.all("logs"), lim)
			wantPartial := perBucket * (failAt - 1)
			if c.apply {
				wantPartial += perBucket
			}
			if len(partial) != wantPartial {
				t.Fatalf("after the cut-off flush %d entries stored, want %d", len(partial), wantPartial)
			}

			fs.heal()
			if c.restart {
				opt.FlushTimeout = 30 * time.Second
				s = e.newSink(opt, e.store(), fastRetry)
			}
			flushSink(t, s, "app.log", chunk, sink.Done)
			entries := checkBuckets(t, e.all("logs"), lim)
			sameEntries(t, entries, want)
			checkSeqs(t, entries, n)
			if dead := e.all("logs_dead"); len(dead) > 0 {
				t.Errorf("%d records parked", len(dead))
			}
		})
	}
}

// Single faults inside one flush: the writer retries (the same write after
// a conflict or timeout; a fresh plan after a duplicate key) and the flush
// ends Done with every record stored once.
func TestFaultsRetriedWithinFlush(t *testing.T) {
	const n, perBucket = 600, 100
	_, recs := appSlice(t, n)
	mine, theirs := join(every(recs, 2, 0)), join(every(recs, 2, 1)[:150])
	lim := limits{perBucket, 64 << 10}
	conflict := mongo.CommandError{Code: 112, Name: "WriteConflict", Message: "write conflict",
		Labels: []string{"TransientTransactionError"}}
	dupKey := mongo.WriteException{WriteErrors: []mongo.WriteError{{Index: 0, Code: 11000,
		Message: "E11000 duplicate key error collection: logs index: _id_ dup key"}}}
	cases := []struct {
		name   string
		err    error
		apply  bool
		failAt int
		race   bool // another writer fills the bucket just before failAt
	}{
		{"write-conflict", conflict, false, 2, false},
		{"timeout", errTimeout, false, 2, false},
		{"timeout-applied", errTimeout, true, 2, false},
		{"network-applied-last", errNetwork, true, 3, false},
		{"duplicate-key", dupKey, false, 2, false},
		{"duplicate-key-applied", dupKey, true, 1, false},
		{"race-bucket-filled", nil, false, 2, true},
		{"race-then-timeout-applied", errTimeout, true, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			fs := &faultStore{Store: e.store(), failAt: c.failAt, err: c.err, apply: c.apply}
			want := decodeFixture(t, mine, parser.Options{})
			if c.race {
				other := e.newSink(opt, e.store(), fastRetry)
				fs.before = func() { // runs on a flush goroutine: no t.Fatal
					if res := other.Flush(t.Context(), "app.log", theirs); res.Status != sink.Done {
						t.Errorf("the other writer's flush: %v (%v)", res.Status, res.Err)
					}
				}
				want = append(want, decodeFixture(t, theirs, parser.Options{})...)
			}
			s := e.newSink(opt, fs, fastRetry)
			flushSink(t, s, "app.log", mine, sink.Done)
			upserts, injected := fs.count()
			if c.err != nil && injected != 1 {
				t.Errorf("%d faults injected, want 1", injected)
			}
			if upserts < c.failAt {
				t.Errorf("only %d upserts, the fault at %d never happened", upserts, c.failAt)
			}
			sameEntries(t, checkBuckets(t, e.all("logs"), lim), want)
			if dead := e.all("logs_dead"); len(dead) > 0 {
				t.Errorf("%d records parked", len(dead))
			}
		})
	}
}
