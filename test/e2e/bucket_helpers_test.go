package e2e

// Helpers of the bucket-engine tests: a msgpack chunk builder, the fixture's
// records one by one, an in-process sink on the test server and a Store that
// injects faults.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// chunkRecords splits a chunk file into its records' msgpack bytes.
func chunkRecords(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return splitChunk(t, data)
}

// splitChunk returns the records of a chunk, each as its msgpack bytes.
func splitChunk(t *testing.T, data []byte) [][]byte {
	t.Helper()
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	var recs [][]byte
	for {
		raw, err := dec.DecodeRaw()
		if err != nil {
			if len(recs) == 0 {
				t.Fatalf("no records in the chunk: %v", err)
			}
			return recs
		}
		recs = append(recs, raw)
	}
}

// join concatenates records into a chunk.
func join(recs [][]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

// every returns the records whose index i has i%n == k.
func every(recs [][]byte, n, k int) [][]byte {
	var out [][]byte
	for i := k; i < len(recs); i += n {
		out = append(out, recs[i])
	}
	return out
}

// eventTime is Fluent Bit's EventTime (msgpack ext 0) of t.
func eventTime(t time.Time) msgpack.RawMessage {
	b := []byte{0xd7, 0x00}
	b = binary.BigEndian.AppendUint32(b, uint32(t.Unix()))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

// kv is one field of a record body built by record; its key is raw bytes
// (it may be invalid UTF-8 or hold NUL), its value anything msgpack encodes.
type kv struct {
	key string
	val any
}

// record encodes one Fluent Bit record [[time, {}], body], keeping the
// body's field order.
func record(t *testing.T, ts time.Time, body ...kv) []byte {
	t.Helper()
	return recordAt(t, eventTime(ts), body...)
}

// recordAt is record with the time given as any value msgpack encodes (an
// integer or float time as the forward protocol allows, or a wrong one).
func recordAt(t *testing.T, ts any, body ...kv) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(enc.EncodeArrayLen(2))
	must(enc.EncodeArrayLen(2))
	must(enc.Encode(ts))
	must(enc.EncodeMapLen(0))
	must(enc.EncodeMapLen(len(body)))
	for _, f := range body {
		must(enc.EncodeString(f.key))
		must(enc.Encode(f.val))
	}
	return buf.Bytes()
}

// decodeFixture decodes records the way the plugin does with opt, for the
// expected entries.
func decodeFixture(t *testing.T, chunk []byte, opt parser.Options) []bson.Raw {
	t.Helper()
	if opt.TimeKey == "" {
		opt.TimeKey = "ts"
	}
	if opt.ReplaceDot == "" {
		opt.ReplaceDot, opt.ReplaceDollar = "_", "_"
	}
	d, err := parser.NewDecoder(opt)
	if err != nil {
		t.Fatal(err)
	}
	var b parser.Batch
	d.Decode(chunk, nil, &b)
	if b.Corrupt != nil || len(b.Bad) > 0 {
		t.Fatalf("fixture does not decode cleanly: %v, %d bad", b.Corrupt, len(b.Bad))
	}
	out := make([]bson.Raw, len(b.Records))
	for i, r := range b.Records {
		out[i] = bson.Raw(append([]byte(nil), r.Doc...))
	}
	return out
}

// sameEntries checks that got and want hold the same documents, each as
// often (order does not matter).
func sameEntries(t *testing.T, got, want []bson.Raw) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d entries stored, %d records sent", len(got), len(want))
	}
	count := map[string]int{}
	for _, w := range want {
		count[string(w)]++
	}
	for _, g := range got {
		count[string(g)]--
	}
	var diffs []string
	for k, n := range count {
		if n != 0 {
			diffs = append(diffs, fmt.Sprintf("%+d x %v", -n, bson.Raw(k)))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 5 {
			diffs = append(diffs[:5], fmt.Sprintf("... %d more", len(diffs)-5))
		}
		t.Errorf("stored entries differ from the records sent (+n: stored n times too often):\n%v", diffs)
	}
}

// testLog is a sink.Logger writing to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Debugf(f string, a ...any) {}
func (l testLog) Infof(f string, a ...any)  { l.t.Logf("info: "+f, a...) }
func (l testLog) Warnf(f string, a ...any)  { l.t.Logf("warn: "+f, a...) }
func (l testLog) Errorf(f string, a ...any) { l.t.Logf("error: "+f, a...) }

// fastRetry retries quickly, so tests that wait for a flush deadline stay
// short.
var fastRetry = writer.Retry{Base: time.Millisecond, Cap: 10 * time.Millisecond}

// sinkOptions are the options of an in-process sink as the plugin sets them
// by default (collection logs, 1m windows), with the given bounds.
func sinkOptions(maxRecords, maxBytes int) sink.Options {
	return sink.Options{
		Mode: model.ModeBucket, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag",
		Idempotent: true, MaxInflight: 4, WriteBatch: 20, FlushTimeout: 10 * time.Second,
		MaxRecords: maxRecords, MaxBytes: maxBytes,
		Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"},
		Grouper: bucketer.Config{TagKey: "tag", Window: time.Minute, Stats: []string{"cost"},
			CountBy: []string{"level"}, ReplaceDot: "_", ReplaceDollar: "_"},
	}
}

// newSink is an in-process sink on e's database through store.
func (e *env) newSink(opt sink.Options, store writer.Store, retry writer.Retry) *sink.Sink {
	e.t.Helper()
	s, err := sink.New(opt, store, retry, testLog{e.t})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// store is the plain Store of e's database.
func (e *env) store() writer.Store { return writer.MongoStore{DB: e.db} }

// Errors a fault injects, shaped as the driver returns them.
var (
	errNetwork = mongo.CommandError{Code: 6, Name: "HostUnreachable", Message: "connection reset by peer",
		Labels: []string{"NetworkError", "RetryableWriteError"}}
	errTimeout = fmt.Errorf("server selection or socket read: %w", context.DeadlineExceeded)
)

// faultStore wraps a Store and injects faults into its write commands
// (Upserts, InsertMany and Replace).
type faultStore struct {
	writer.Store

	mu     sync.Mutex
	writes int // write calls so far
	// failAt makes the failAt-th write (from 1) fail with err; with down,
	// every call after it fails too, as when the server is gone, until
	// heal. With apply, the failing write is applied first and its
	// outcome lost (a timeout after the server wrote it).
	failAt   int
	err      error
	apply    bool
	times    int // with failAt and not down: how many calls from failAt fail (0: one)
	down     bool
	tripped  bool
	injected int
	// before, when set, runs just before the failAt-th write is sent
	// (another writer acting in between); it does not fail the call.
	before func()
	// findEvery, above 0, makes every findEvery-th Find (and Ping) lose
	// its connection: a flaky network.
	findEvery, finds int
	// widest is the most statements one Upserts command held.
	widest int
	// late keeps the failAt-th write from the server, its outcome lost,
	// and applies it just before the first write once the store is
	// healed: a write that reaches the server after its client gave up,
	// and after the chunk's resend looked for what it stored.
	late bool
	held func() error
	// match, when set, picks the update commands the faults are for; the
	// others pass, uncounted, also while the store is down.
	match   func(ups []writer.Upsert) bool
	lateErr error // the late write's outcome
}

// write runs do as the next write call, failing it as configured; late is
// the call to make when it is held (see late).
func (f *faultStore) write(do, late func() error) error {
	f.mu.Lock()
	if held := f.held; held != nil && !f.tripped {
		// Under the lock: before any write of the resend.
		f.held = nil
		f.lateErr = held()
	}
	f.writes++
	hit := f.failAt > 0 && f.writes == f.failAt
	again := f.failAt > 0 && f.writes > f.failAt && f.writes < f.failAt+f.times
	fail := ((hit || again) && f.err != nil) || (f.down && f.tripped)
	if hit {
		f.tripped = true
	}
	before := f.before
	if hit {
		f.before = nil
	}
	if fail {
		f.injected++
	}
	err, apply := f.err, f.apply && hit
	if hit && f.late {
		f.held = late
	}
	f.mu.Unlock()
	if hit && before != nil {
		before()
	}
	if !fail {
		return do()
	}
	if apply {
		if aerr := do(); aerr != nil {
			return aerr
		}
	}
	return err
}

// Upserts fails or loses the reply of a whole command.
func (f *faultStore) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	f.mu.Lock()
	f.widest = max(f.widest, len(ups))
	f.mu.Unlock()
	if f.match != nil && !f.match(ups) {
		return f.Store.Upserts(ctx, coll, ups)
	}
	var errs []error
	// A late write runs after this call returned: on a context of its own.
	late := func() error { return errors.Join(f.Store.Upserts(context.WithoutCancel(ctx), coll, ups)...) }
	if err := f.write(func() error {
		errs = f.Store.Upserts(ctx, coll, ups)
		return nil
	}, late); err != nil {
		return slices.Repeat([]error{err}, len(ups))
	}
	return errs
}

func (f *faultStore) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	return f.write(func() error { return f.Store.InsertMany(ctx, coll, docs) }, nil)
}

func (f *faultStore) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	return f.write(func() error { return f.Store.Replace(ctx, coll, docs) }, nil)
}

func (f *faultStore) Find(ctx context.Context, coll string, filter bson.Raw, q writer.Query) ([]bson.Raw, error) {
	if err := f.outage(); err != nil {
		return nil, err
	}
	if err := f.flaky(); err != nil {
		return nil, err
	}
	return f.Store.Find(ctx, coll, filter, q)
}

// Ping fails during an outage: the server is gone, not refusing content.
func (f *faultStore) Ping(ctx context.Context) error {
	if err := f.outage(); err != nil {
		return err
	}
	if err := f.flaky(); err != nil {
		return err
	}
	return f.Store.Ping(ctx)
}

// flaky fails every findEvery-th read.
func (f *faultStore) flaky() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.findEvery == 0 {
		return nil
	}
	if f.finds++; f.finds%f.findEvery == 0 {
		return errNetwork
	}
	return nil
}

func (f *faultStore) outage() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down && f.tripped {
		return f.err
	}
	return nil
}

// errGaveUp ends a flush whose store is down, as its deadline would.
var errGaveUp = errors.New("gave up: the store is down")

// retry retries quickly while the store answers and gives up at once
// during an outage: a flush cut off by an outage ends on that event, not on
// a deadline the machine's speed decides.
func (f *faultStore) retry() writer.Retry {
	return writer.Retry{Base: time.Millisecond, Cap: 10 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if f.outage() != nil {
				return errGaveUp
			}
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
}

// heal ends an outage: every later call goes through.
func (f *faultStore) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.failAt, f.tripped = false, 0, false
}

func (f *faultStore) count() (writes, injected int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.injected
}

// flushSink flushes chunk through s and checks the status.
func flushSink(t *testing.T, s *sink.Sink, tag string, chunk []byte, want sink.Status) sink.Result {
	t.Helper()
	res := s.Flush(context.Background(), tag, chunk)
	if res.Status != want {
		t.Fatalf("flush: %v (%v), want %v", res.Status, res.Err, want)
	}
	return res
}
