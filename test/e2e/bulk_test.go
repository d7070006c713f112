package e2e

// Bulk writes: one chunk's bucket writes go out as unordered commands of up
// to write_batch statements, each statement with its own outcome; and the
// shard key: every collection the plugin creates is sharded before its
// first write, and every update filter names the shard key's fields.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/chunks"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// commandLog keeps the commands a client sends.
type commandLog struct {
	mu   sync.Mutex
	cmds []sentCommand
}

type sentCommand struct {
	name string
	body bson.Raw
}

func (l *commandLog) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cmds = append(l.cmds, sentCommand{e.CommandName, append(bson.Raw(nil), e.Command...)})
	}}
}

// since returns the commands sent after the first n.
func (l *commandLog) since(n int) []sentCommand {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sentCommand(nil), l.cmds[n:]...)
}

func (l *commandLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cmds)
}

// named returns the commands of cmds called name.
func named(cmds []sentCommand, name string) []sentCommand {
	var out []sentCommand
	for _, c := range cmds {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// statements returns the statements of an update command.
func statements(t *testing.T, c sentCommand) []bson.Raw {
	t.Helper()
	var out []bson.Raw
	for _, v := range mustValues(t, c.body.Lookup("updates")) {
		out = append(out, v.Document())
	}
	return out
}

// monitored is an in-process instance on e's database whose client
// commands land in the returned log.
func monitored(t *testing.T, e *env, kv ...string) (*instance.Instance, *commandLog, *harness.Buffer) {
	t.Helper()
	m := conf.Map{}
	for k, v := range e.props(kv...) {
		m.Set(k, v)
	}
	var cmds commandLog
	var log harness.Buffer
	in, err := instance.NewWith(m, "mongodb.0", &log, instance.Seams{Monitor: cmds.monitor()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Exit)
	return in, &cmds, &log
}

// traceChunk is the first n records of the app fixture with 5 consecutive
// records per trace id (make bench uses all 5000, over 1000 traces).
func traceChunk(t *testing.T, n int) []byte {
	t.Helper()
	chunk, err := chunks.Traces(readFixture(t, "chunk-app-json-5000.msgpack"), 5)
	if err != nil {
		t.Fatal(err)
	}
	return join(splitChunk(t, chunk)[:n])
}

// Trace grouping (one bucket per trace, no window): a chunk of 200 traces
// costs one lookup and ceil(200 / write_batch) update commands. (The test
// server scans its collection on every bucket write, so the chunk is the
// fixture's first 1000 records, not all 5000.)
func TestBulkTraceGroupingCommands(t *testing.T) {
	const batch, records, traces = 20, 1000, 200
	e := newDBEnv(t)
	in, cmds, log := monitored(t, e, "bucket_key", "traceId", "bucket_window", "0", "write_batch", fmt.Sprint(batch))
	// The collection is set up (indexes) by a first chunk.
	warm := join([][]byte{record(t, time.Date(2024, 6, 1, 9, 0, 0, 0, time.UTC), kv{"traceId", "warm-up"})})
	if st := in.Flush("app.log", warm); st != sink.Done {
		t.Fatalf("warm-up flush: %v\n%s", st, log)
	}
	chunk := traceChunk(t, records)
	from := cmds.len()
	if st := in.Flush("app.log", chunk); st != sink.Done {
		t.Fatalf("flush: %v\n%s", st, log)
	}
	sent := cmds.since(from)
	// The look-ups of what earlier attempts stored and parked (a content
	// the process does not know may be an earlier process's resend), and
	// the updates.
	limit := (traces+batch-1)/batch + 2
	if len(sent) > limit {
		t.Errorf("%d commands for the chunk, want at most ceil(%d/%d)+2 = %d", len(sent), traces, batch, limit)
	}
	updates := named(sent, "update")
	statementsSent := 0
	for _, c := range updates {
		n := len(statements(t, c))
		if n > batch {
			t.Errorf("an update command of %d statements, write_batch is %d", n, batch)
		}
		statementsSent += n
	}
	if statementsSent != traces {
		t.Errorf("%d update statements, want one per trace (%d)", statementsSent, traces)
	}
	t.Logf("%d commands (%d updates, %d statements) for %d records in %d buckets", len(sent), len(updates), statementsSent, records, traces)

	docs := e.all("logs")
	if len(docs) != traces+1 {
		t.Errorf("%d buckets, want %d", len(docs), traces+1)
	}
	want := append(decodeFixture(t, warm, parser.Options{}), decodeFixture(t, chunk, parser.Options{})...)
	sameEntries(t, checkBuckets(t, docs, limits{1000, 1 << 20}), want)
}

// shardRefusal is the log line of a refused shardCollection.
const shardRefusal = "shard_key: the server refused to shard"

// checkSharded checks that each of colls got one shardCollection with key,
// before any write to it, and that a refusal was logged once.
func checkSharded(t *testing.T, e *env, sent []sentCommand, log string, key bson.D, colls ...string) {
	t.Helper()
	wantKey, err := bson.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	sharded := map[string]int{}
	written := map[string]bool{}
	for _, c := range sent {
		switch c.name {
		case "shardCollection":
			ns := c.body.Lookup("shardCollection").StringValue()
			coll := strings.TrimPrefix(ns, e.dbName+".")
			if written[coll] {
				t.Errorf("%s sharded after a write to it", coll)
			}
			if got := c.body.Lookup("key").Document(); !bytesEqual(got, wantKey) {
				t.Errorf("%s sharded on %v, want %v", coll, got, bson.Raw(wantKey))
			}
			sharded[coll]++
		case "update", "insert":
			coll, _ := c.body.Lookup(c.name).StringValueOK()
			written[coll] = true
		}
	}
	for _, coll := range colls {
		if sharded[coll] != 1 {
			t.Errorf("collection %s: %d shardCollection commands, want 1 (all: %v)", coll, sharded[coll], sharded)
		}
	}
	if n := strings.Count(log, shardRefusal); n > 1 {
		t.Errorf("the refusal to shard logged %d times at warn, want once:\n%s", n, log)
	}
	if !e.srv.Real && !strings.Contains(log, shardRefusal) {
		t.Errorf("the test server refuses shardCollection, and nothing says so:\n%s", log)
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// shard_key: each partition the plugin creates is sharded on the
// configured key before its first write; every update filter names the key
// fields and the window start; the test server refuses to shard, which is
// one warning, and every record is stored.
func TestShardKeyBuckets(t *testing.T) {
	cases := []struct {
		name  string
		props []string
		key   bson.D
	}{
		{"key_start", []string{"shard_key", "key_start"}, bson.D{{Key: "key.module", Value: 1}, {Key: "key.host.name", Value: 1}, {Key: "start", Value: 1}}},
		{"hashed_id", []string{"shard_key", "hashed_id"}, bson.D{{Key: "_id", Value: "hashed"}}},
		{"list", []string{"shard_key", "host.name:hashed,start"}, bson.D{{Key: "key.host.name", Value: "hashed"}, {Key: "start", Value: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			props := append([]string{"bucket_key", "module,host.name", "partition", "day"}, c.props...)
			in, cmds, log := monitored(t, e, props...)
			day1 := time.Date(2099, 1, 1, 23, 59, 0, 0, time.UTC)
			var recs [][]byte
			for i := 0; i < 40; i++ {
				at := day1.Add(time.Duration(i) * 3 * time.Second) // over midnight: two partitions
				recs = append(recs, record(t, at, kv{"module", fmt.Sprintf("m%d", i%4)},
					kv{"host", map[string]any{"name": fmt.Sprintf("h%d", i%3)}}, kv{"seq", i}))
			}
			chunk := join(recs)
			if st := in.Flush("app.log", chunk); st != sink.Done {
				t.Fatalf("flush: %v\n%s", st, log)
			}
			sent := cmds.since(0)
			checkSharded(t, e, sent, log.String(), c.key, "logs_20990101", "logs_20990102")
			for _, u := range named(sent, "update") {
				for _, s := range statements(t, u) {
					q := s.Lookup("q").Document()
					for _, f := range []string{"_id", "key.module", "key.host.name", "start", "count"} {
						if _, err := q.LookupErr(f); err != nil {
							t.Errorf("update filter %v lacks %s", q, f)
						}
					}
				}
			}
			var entries []bson.Raw
			for _, coll := range []string{"logs_20990101", "logs_20990102"} {
				entries = append(entries, checkBuckets(t, e.all(coll), limits{1000, 1 << 20})...)
			}
			sameEntries(t, entries, decodeFixture(t, chunk, parser.Options{}))
		})
	}
}

// Flat mode shards on a hashed _id.
func TestShardKeyFlat(t *testing.T) {
	e := newDBEnv(t)
	in, cmds, log := monitored(t, e, "mode", "flat", "shard_key", "hashed_id")
	chunk, _ := appSlice(t, 100)
	if st := in.Flush("app.log", chunk); st != sink.Done {
		t.Fatalf("flush: %v\n%s", st, log)
	}
	checkSharded(t, e, cmds.since(0), log.String(), bson.D{{Key: "_id", Value: "hashed"}}, "logs")
	if n := len(e.all("logs")); n != 100 {
		t.Errorf("%d documents, want 100", n)
	}
}

// Faults in bulk writes: a chunk of 40 traces goes out as commands of 20
// statements; a command's reply is lost (after it applied or not), its
// connection drops twice, a statement hits a duplicate key because another
// writer filled its bucket first, or the chunk is cut off and resent after
// a restart. Every record ends stored once.
func TestFaultsBulk(t *testing.T) {
	const records = 200
	chunk := traceChunk(t, records)
	lim := limits{1000, 1 << 20}
	cases := []struct {
		name    string
		err     error
		apply   bool
		failAt  int
		times   int
		race    bool // another writer writes to one of the traces just before failAt
		restart bool // the flush is cut off at failAt, then the chunk is resent by a new sink
	}{
		{"reply-lost-applied", errTimeout, true, 1, 0, false, false},
		{"reply-lost", errTimeout, false, 2, 0, false, false},
		{"network-applied", errNetwork, true, 2, 0, false, false},
		// Both commands of two rounds in a row lose their connection while
		// the server answers: their statements are sent alone, and nothing
		// is suspected of the records (no connection drops again).
		{"network-applied-twice", errNetwork, true, 1, 4, false, false},
		{"duplicate-key-injected", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{
			Index: 0, Code: 11000, Message: "E11000 duplicate key error collection: logs index: _id_ dup key"}}}}, false, 1, 0, false, false},
		{"duplicate-key-race", nil, false, 1, 0, true, false},
		{"restart-applied", errTimeout, true, 2, 0, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			opt := sinkOptions(lim.records, lim.bytes)
			opt.Grouper.KeyPaths, opt.Grouper.Window = []string{"traceId"}, 0
			fs := &faultStore{Store: e.store(), failAt: c.failAt, err: c.err, apply: c.apply, times: c.times, down: c.restart}
			want := decodeFixture(t, chunk, parser.Options{})
			if c.race {
				theirs := join([][]byte{record(t, time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC), kv{"traceId", "tr000003"}, kv{"msg", "theirs"})})
				other := e.newSink(opt, e.store(), fastRetry)
				fs.before = func() { // runs on a flush goroutine: no t.Fatal
					if res := other.Flush(t.Context(), "app.log", theirs); res.Status != sink.Done {
						t.Errorf("the other writer's flush: %v (%v)", res.Status, res.Err)
					}
				}
				want = append(want, decodeFixture(t, theirs, parser.Options{})...)
			}
			s := e.newSink(opt, fs, fs.retry())
			if c.restart {
				flushSink(t, s, "app.log", chunk, sink.Retry)
				fs.heal()
				s = e.newSink(opt, e.store(), fastRetry)
			}
			flushSink(t, s, "app.log", chunk, sink.Done)
			writes, injected := fs.count()
			if c.err != nil && injected != max(c.times, 1) {
				t.Errorf("%d faults injected, want %d", injected, max(c.times, 1))
			}
			if writes < c.failAt {
				t.Errorf("only %d write commands, the fault at %d never happened", writes, c.failAt)
			}
			if fs.widest != 20 {
				t.Errorf("the widest command held %d statements, want write_batch (20)", fs.widest)
			}
			sameEntries(t, checkBuckets(t, e.all("logs"), lim), want)
			if dead := e.all("logs_dead"); len(dead) > 0 {
				t.Errorf("%d records parked", len(dead))
			}
		})
	}
}

// The plugin reads buildInfo before its first write: on FerretDB v1, which
// deadlocks on larger update batches, write_batch 100 is lowered to 20
// with one warning; on any other server it is kept.
func TestBulkWriteBatchForTheServer(t *testing.T) {
	const records, traces = 1000, 200
	e := newDBEnv(t)
	info, err := e.db.Client().Database("admin").RunCommand(t.Context(), bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	_, v1 := info.Lookup("ferretdbVersion").StringValueOK()
	in, cmds, log := monitored(t, e, "bucket_key", "traceId", "bucket_window", "0", "write_batch", "100")
	if st := in.Flush("app.log", traceChunk(t, records)); st != sink.Done {
		t.Fatalf("flush: %v\n%s", st, log)
	}
	widest := 0
	for _, c := range named(cmds.since(0), "update") {
		widest = max(widest, len(statements(t, c)))
	}
	const warning = "write_batch 100 lowered to 20 for this server: it deadlocks on update commands of more than about 20 matched statements"
	switch {
	case v1 && (widest > 20 || strings.Count(log.String(), warning) != 1):
		t.Errorf("FerretDB v1: widest update %d statements, want 20 at most, and the warning once:\n%s", widest, log)
	case !v1 && (widest != 100 || strings.Contains(log.String(), "lowered")):
		t.Errorf("widest update %d statements, want write_batch's 100, and no warning:\n%s", widest, log)
	}
	if n := len(e.all("logs")); n != traces {
		t.Errorf("%d buckets, want %d", n, traces)
	}
}

// One round per bucket: each round writes the next bucket of every group
// of the chunk (a group's next bucket is inserted only once the one
// before it exists, so that a fence can tell where an earlier write may
// still land), so a chunk costs the lookup plus, for each bucket of the
// group filling the most, ceil(groups / write_batch) update commands, one
// statement per bucket it touches: for a group the writer has not seen yet
// (a fresh collection) as for one it has, and for a one-key chunk of 10
// buckets as for the app fixture.
func TestBulkOneRoundPerBucket(t *testing.T) {
	app := readFixture(t, "chunk-app-json-5000.msgpack")
	oneKey := join(append(splitChunk(t, app), splitChunk(t, app)...)) // 10,000 records, each line twice
	for _, c := range []struct {
		name      string
		chunk     []byte
		kv        []string
		warm      bool
		wantStmts int  // 0: as many as buckets touched
		ordered   bool // each chunk's seqs rise within every bucket
	}{
		// The one-key chunk holds the fixture twice: seq rises within each
		// copy, whose 5000 records fill 5 buckets of their own when the
		// collection is fresh.
		{"one key, fresh collection", oneKey, []string{"bucket_window", "0"}, false, 10, true},
		{"one key, known group", oneKey, []string{"bucket_window", "0"}, true, 11, false},
		{"app fixture by module", app, []string{"bucket_key", "module"}, true, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const batch = 20
			e := newDBEnv(t)
			in, cmds, log := monitored(t, e, append(c.kv, "write_batch", fmt.Sprint(batch))...)
			var want []bson.Raw
			if c.warm {
				warm := splitChunk(t, app)[0]
				if st := in.Flush("app.log", warm); st != sink.Done {
					t.Fatalf("warm-up flush: %v\n%s", st, log)
				}
				want = decodeFixture(t, warm, parser.Options{})
			}
			from := cmds.len()
			if st := in.Flush("app.log", c.chunk); st != sink.Done {
				t.Fatalf("flush: %v\n%s", st, log)
			}
			sent := cmds.since(from)
			finds, updates := named(sent, "find"), named(sent, "update")
			touched := map[string]bool{}
			perGroup := map[string]int{} // statements, by group (the _id before "-<seq>")
			stmts := 0
			for _, u := range updates {
				for _, s := range statements(t, u) {
					if multi, _ := s.Lookup("multi").BooleanOK(); multi {
						continue // a fence (see writer.Buckets.Write), not a bucket write
					}
					stmts++
					id := s.Lookup("q", "_id").StringValue()
					touched[id] = true
					perGroup[id[:strings.LastIndexByte(id, '-')]]++
				}
			}
			// Each round writes the next bucket of every group: as many
			// rounds as the group filling the most buckets needs.
			rounds := 0
			for _, n := range perGroup {
				rounds = max(rounds, n)
			}
			if stmts != len(touched) {
				t.Errorf("%d statements for %d buckets: a bucket was written more than once", stmts, len(touched))
			}
			if c.wantStmts > 0 && stmts != c.wantStmts {
				t.Errorf("%d statements, want %d (one per bucket the chunk fills)", stmts, c.wantStmts)
			}
			// The look-ups of what earlier attempts stored and parked.
			if limit := rounds * ((len(perGroup) + batch - 1) / batch); len(updates) > limit || len(finds) > 2 {
				t.Errorf("%d lookups and %d update commands, want 2 and at most %d rounds of ceil(%d groups/%d) = %d", len(finds), len(updates), rounds, len(perGroup), batch, limit)
			}
			t.Logf("%d commands (%d finds, %d updates, %d statements) for the chunk", len(sent), len(finds), len(updates), stmts)
			docs := e.all("logs")
			want = append(want, decodeFixture(t, c.chunk, parser.Options{})...)
			sameEntries(t, checkBuckets(t, docs, limits{1000, 1 << 20}), want)
			if c.ordered {
				inChunkOrder(t, docs)
			}
		})
	}
}

// inChunkOrder checks that every bucket holds the entries each chunk wrote
// there in the chunk's order: the app fixture's seq rises within the runs
// of one chunk's tag.
func inChunkOrder(t *testing.T, docs []bson.Raw) {
	t.Helper()
	for _, d := range docs {
		var tag uint32
		last := int64(-1)
		for _, r := range writer.OpRuns(d) {
			if r.Tag != tag {
				tag, last = r.Tag, -1
			}
			for i, v := range r.Entries {
				seq, _ := v.Document().Lookup("seq").AsInt64OK()
				if seq <= last {
					t.Errorf("bucket %v: entry %d has seq %d after %d", d.Lookup("_id"), r.At+i, seq, last)
					return
				}
				last = seq
			}
		}
	}
}
