package e2e

// Faults injected below an in-process sink (the plugin's core) through a
// Store wrapper, against the test server: a chunk interrupted half-way and
// resent, by the same sink or by a new one after a "restart", and single
// faults a flush must ride out.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// appSlice is the first n records of the app fixture as a chunk, with the
// entries they must become.
func appSlice(t *testing.T, n int) ([]byte, [][]byte) {
	t.Helper()
	recs := chunkRecords(t, fixture("chunk-app-json-5000.msgpack"))[:n]
	return join(recs), recs
}

// interruptions are the ways a flush is cut off: the server becomes
// unreachable at a write, which in the "applied" cases reached the server
// with its reply lost; the chunk is then sent again by the same sink or, in
// the "restart" cases, by a new one (nothing in memory).
var interruptions = []struct {
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

// A chunk whose flush is cut off after some bucket writes (at the failAt-th
// update command, the flush giving up as at its deadline) is given back
// for a retry with part of it stored; sent again, it ends stored exactly
// once. The app records are 29 ms apart: the first 1000 share one window,
// so the group fills 10 buckets of 100, one a round: one command each,
// the fourth cutting the server off with write_batch 1, the first with
// write_batch 20.
func TestFaultsInterruptedChunkResent(t *testing.T) {
	const n, perBucket = 1000, 100
	chunk, _ := appSlice(t, n)
	want := decodeFixture(t, chunk, parser.Options{})
	lim := limits{perBucket, 64 << 10}
	for _, b := range []cutAt{{1, 4, perBucket}, {20, 1, perBucket}} {
		for _, c := range interruptions {
			t.Run(fmt.Sprintf("%s/write_batch=%d", c.name, b.batch), func(t *testing.T) {
				interruptedChunkResent(t, chunk, want, lim, b, c.err, c.apply, c.restart)
			})
		}
	}
}

// cutAt is where a flush is cut off: at the failAt-th update command, each
// of up to batch statements, storing perCommand records.
type cutAt struct{ batch, failAt, perCommand int }

func interruptedChunkResent(t *testing.T, chunk []byte, want []bson.Raw, lim limits, at cutAt, fault error, apply, restart bool) {
	t.Helper()
	n, failAt, perCommand := len(want), at.failAt, at.perCommand
	e := newDBEnv(t)
	opt := sinkOptions(lim.records, lim.bytes)
	opt.WriteBatch = at.batch
	fs := &faultStore{Store: e.store(), failAt: failAt, err: fault, apply: apply, down: true}
	s := e.newSink(opt, fs, fs.retry())
	res := flushSink(t, s, "app.log", chunk, sink.Retry)
	if res.Err == nil {
		t.Errorf("retry without an error")
	}
	partial := checkBuckets(t, e.all("logs"), lim)
	wantPartial := perCommand * (failAt - 1)
	if apply {
		wantPartial += perCommand
	}
	if len(partial) != wantPartial {
		t.Fatalf("after the cut-off flush %d entries stored, want %d", len(partial), wantPartial)
	}

	fs.heal()
	if restart {
		s = e.newSink(opt, e.store(), fastRetry)
	}
	flushSink(t, s, "app.log", chunk, sink.Done)
	// Each record counts once: stored by the attempt that saw its
	// write acknowledged, or found stored by the resend.
	wantFound := 0
	switch {
	case restart:
		wantFound = wantPartial
	case apply:
		wantFound = perCommand
	}
	if tot := s.Totals(); tot.Records != int64(n) || tot.Stored != int64(n-wantFound) || tot.Found != int64(wantFound) || tot.Parked != 0 {
		t.Errorf("totals %+v, want %d records: %d stored, %d already stored", tot, n, n-wantFound, wantFound)
	}
	entries := checkBuckets(t, e.all("logs"), lim)
	sameEntries(t, entries, want)
	checkSeqs(t, entries, n)
	if dead := e.all("logs_dead"); len(dead) > 0 {
		t.Errorf("%d records parked", len(dead))
	}
}

// A write whose reply is lost reaches the server late: after the flush
// gave up, and after the chunk's resend looked for what its earlier
// attempt stored. The resend writes the records of that write at its
// position first, so that of the two one applies: each record is stored
// once. The chunk's 300 records fill 3 buckets, written in one round, one
// command each; the second to arrive is the late one.
func TestFaultsLateWrite(t *testing.T) {
	const n, perBucket = 300, 100
	chunk, _ := appSlice(t, n)
	want := decodeFixture(t, chunk, parser.Options{})
	lim := limits{perBucket, 64 << 10}
	for _, c := range []struct {
		name  string
		fault error
	}{{"timeout", errTimeout}, {"network", errNetwork}} {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			opt.WriteBatch = 1
			fs := &faultStore{Store: e.store(), failAt: 2, err: c.fault, down: true, late: true}
			s := e.newSink(opt, fs, fs.retry())
			flushSink(t, s, "app.log", chunk, sink.Retry)
			fs.heal()
			flushSink(t, s, "app.log", chunk, sink.Done)
			fs.mu.Lock()
			held, lateErr := fs.held, fs.lateErr
			fs.mu.Unlock()
			if held != nil || lateErr != nil {
				t.Fatalf("the late write was not applied (%v)", lateErr)
			}
			if tot := s.Totals(); tot.Records != n || tot.Stored+tot.Found != n || tot.Parked != 0 {
				t.Errorf("totals %+v, want %d records stored or already stored", tot, n)
			}
			entries := checkBuckets(t, e.all("logs"), lim)
			sameEntries(t, entries, want)
			checkSeqs(t, entries, n)
		})
	}
}

// A chunk of identical records (a line repeated within the resolution of
// its time) fills bucket 0 and then loses the write of bucket 1; sent
// again, by the same sink or after a restart, the records found in bucket
// 0 are not taken for the resend's own write there, though they are the
// chunk's and equal to the records left: every record is stored once.
func TestFaultsIdenticalRecordsResent(t *testing.T) {
	const n, perBucket = 200, 100
	_, recs := appSlice(t, 1)
	chunk := join(slices.Repeat(recs, n))
	want := decodeFixture(t, chunk, parser.Options{})
	lim := limits{perBucket, 64 << 10}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			opt.WriteBatch = 1
			fs := &faultStore{Store: e.store(), failAt: 1, err: errNetwork, down: true,
				match: func(ups []writer.Upsert) bool {
					id, _ := ups[0].Filter.Lookup("_id").StringValueOK()
					return strings.HasSuffix(id, "-1")
				}}
			s := e.newSink(opt, fs, fs.retry())
			flushSink(t, s, "app.log", chunk, sink.Retry)
			if got := len(checkBuckets(t, e.all("logs"), lim)); got != perBucket {
				t.Fatalf("after the cut-off flush %d entries stored, want %d", got, perBucket)
			}
			fs.heal()
			if restart {
				s = e.newSink(opt, e.store(), fastRetry)
			}
			flushSink(t, s, "app.log", chunk, sink.Done)
			sameEntries(t, checkBuckets(t, e.all("logs"), lim), want)
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
		times  int
		race   bool // another writer fills the bucket just before failAt
		batch  int  // write_batch
	}{
		// The chunk's 300 records fill 3 buckets, written in one round:
		// with write_batch 1 as 3 commands, arriving in any order, the
		// failAt-th of them failing; with write_batch 20 as one.
		{"write-conflict", conflict, false, 2, 0, false, 1},
		{"timeout", errTimeout, false, 2, 0, false, 1},
		{"timeout-applied", errTimeout, true, 2, 0, false, 1},
		{"network-applied-last", errNetwork, true, 3, 0, false, 1},
		// Applied, then its repeat fails too: two dropped connections on
		// one write with the server answering make its content suspect,
		// and the halves find the whole write already there.
		{"network-applied-then-suspect", errNetwork, true, 2, 2, false, 1},
		{"duplicate-key", dupKey, false, 2, 0, false, 1},
		{"duplicate-key-applied", dupKey, true, 1, 0, false, 1},
		{"race-bucket-filled", nil, false, 2, 0, true, 1},
		{"race-then-timeout-applied", errTimeout, true, 2, 0, true, 1},
		{"one-command-write-conflict", conflict, false, 1, 0, false, 20},
		{"one-command-timeout-applied", errTimeout, true, 1, 0, false, 20},
		{"one-command-network-applied", errNetwork, true, 1, 0, false, 20},
		{"one-command-network-applied-then-suspect", errNetwork, true, 1, 2, false, 20},
		{"one-command-duplicate-key-applied", dupKey, true, 1, 0, false, 20},
		{"one-command-race-then-timeout-applied", errTimeout, true, 1, 0, true, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			opt.WriteBatch = c.batch
			fs := &faultStore{Store: e.store(), failAt: c.failAt, err: c.err, apply: c.apply, times: c.times}
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
			if c.err != nil && injected != max(c.times, 1) {
				t.Errorf("%d faults injected, want %d", injected, max(c.times, 1))
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

// Flat mode: the insert of a chunk fails (the server gone; in the
// "applied" cases after it stored the documents) and the flush gives up;
// sent again, by the same sink or by a restarted one, every record is
// stored once.
func TestFaultsFlatInterruptedChunkResent(t *testing.T) {
	const n = 1000
	chunk, _ := appSlice(t, n)
	for _, c := range interruptions {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(0, 0)
			opt.Mode = model.ModeFlat
			fs := &faultStore{Store: e.store(), failAt: 1, err: c.err, apply: c.apply, down: true}
			s := e.newSink(opt, fs, fs.retry())
			flushSink(t, s, "app.log", chunk, sink.Retry)
			wantPartial := 0
			if c.apply {
				wantPartial = n
			}
			if got := len(e.all("logs")); got != wantPartial {
				t.Fatalf("after the cut-off flush %d documents stored, want %d", got, wantPartial)
			}
			fs.heal()
			if c.restart {
				s = e.newSink(opt, e.store(), fastRetry)
			}
			flushSink(t, s, "app.log", chunk, sink.Done)
			checkFlat(t, e.all("logs"), decodeFixture(t, chunk, parser.Options{Reserved: []string{"_id", "tag"}}), "app.log")
			if dead := e.all("logs_dead"); len(dead) > 0 {
				t.Errorf("%d records parked", len(dead))
			}
		})
	}
}

// refusingStore refuses, for their content, the dead-letter documents
// larger than max bytes (every one when max is 0), as a server with a
// smaller document limit would.
type refusingStore struct {
	writer.Store
	max int
}

func (r refusingStore) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if coll != "logs_dead" {
		return r.Store.InsertMany(ctx, coll, docs)
	}
	var keep []bson.Raw
	var refused []mongo.BulkWriteError
	for i, d := range docs {
		if r.max == 0 || len(d) > r.max {
			refused = append(refused, mongo.BulkWriteError{WriteError: mongo.WriteError{Index: i, Code: 10334,
				Message: "object to insert too large"}})
		} else {
			keep = append(keep, d)
		}
	}
	if err := r.Store.InsertMany(ctx, coll, keep); err != nil {
		return err
	}
	if len(refused) > 0 {
		return mongo.BulkWriteException{WriteErrors: refused}
	}
	return nil
}

// A dead-letter document the server refuses is stored reduced (its reason,
// sizes and first bytes, with why it was refused); a server that refuses
// even that gets the chunk back for a retry: a parked record is never
// dropped.
func TestFaultsDeadLetterRefused(t *testing.T) {
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	big := record(t, at, kv{"id", "big"}, kv{"msg", strings.Repeat("x", 40000)})
	small := record(t, at, kv{"id", "small"}, kv{"msg", "hello"})
	chunk := join([][]byte{small, big})
	opt := sinkOptions(100, 16<<10) // the 40 KB record exceeds a bucket: it is parked
	t.Run("reduced", func(t *testing.T) {
		e := newDBEnv(t)
		s := e.newSink(opt, refusingStore{Store: e.store(), max: 4 << 10}, fastRetry)
		res := flushSink(t, s, "app", chunk, sink.Done)
		if res.Stored != 1 || res.Parked != 1 {
			t.Errorf("%d stored, %d parked, want 1 and 1", res.Stored, res.Parked)
		}
		dead := e.all("logs_dead")
		if len(dead) != 1 {
			t.Fatalf("%d dead letters, want 1", len(dead))
		}
		d := dead[0]
		_, raw := d.Lookup("raw").Binary()
		if len(raw) != 1024 || d.Lookup("size").AsInt64() < 40000 || !d.Lookup("truncated").Boolean() ||
			!strings.Contains(d.Lookup("refused").StringValue(), "too large") ||
			!strings.Contains(d.Lookup("reason").StringValue(), "exceeds") {
			t.Errorf("reduced dead letter: %v", without(t, d, "raw"))
		}
	})
	t.Run("refused-again", func(t *testing.T) {
		e := newDBEnv(t)
		s := e.newSink(opt, refusingStore{Store: e.store()}, fastRetry)
		res := flushSink(t, s, "app", chunk, sink.Retry)
		if !strings.Contains(res.Err.Error(), "refuses even a reduced record") {
			t.Errorf("error %v", res.Err)
		}
	})
}

// With write_concern majority, the reads that decide whether a write is
// already stored (the chunk's lookup, a bucket read after a lost reply, the
// check of flat inserts) read at majority: a write acknowledged only by the
// primary, which a failover may roll back, never counts as stored.
func TestFaultsMajorityReads(t *testing.T) {
	e := newDBEnv(t)
	var mu sync.Mutex
	levels := map[string]int{}
	mon := &event.CommandMonitor{Started: func(_ context.Context, ev *event.CommandStartedEvent) {
		if ev.CommandName != "find" {
			return
		}
		level, _ := ev.Command.Lookup("readConcern", "level").StringValueOK()
		mu.Lock()
		levels[level]++
		mu.Unlock()
	}}
	client, err := mongo.Connect(options.Client().ApplyURI(e.srv.URI).SetMonitor(mon))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	store := writer.MongoStore{DB: client.Database(e.dbName), Majority: true}
	chunk, _ := appSlice(t, 300)
	for _, mode := range []model.Mode{model.ModeBucket, model.ModeFlat} {
		opt := sinkOptions(100, 64<<10)
		opt.Mode, opt.Collection = mode, "logs_"+string(mode)
		fs := &faultStore{Store: store, failAt: 2, err: errTimeout, apply: true}
		s := e.newSink(opt, fs, fastRetry)
		flushSink(t, s, "app.log", chunk, sink.Done)
		flushSink(t, s, "app.log", chunk, sink.Done)
	}
	mu.Lock()
	defer mu.Unlock()
	if levels["majority"] < 4 || len(levels) != 1 {
		t.Errorf("find commands by read concern level: %v, want every one at majority", levels)
	}
}
