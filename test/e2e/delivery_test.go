package e2e

// Exactly once through the real .so when a chunk is sent again long after
// it was stored: after a restart of the agent, and after enough traffic
// that nothing the process remembers could recognise it. The plugin cannot
// tell such a resend from one whose acknowledgement was lost, so both must
// add nothing; what decides is what the server holds.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// idRecord is a record with an id field (counted by storedIDs) and a body
// of size bytes.
func idRecord(t *testing.T, ts time.Time, id string, size int) []byte {
	return record(t, ts, kv{"id", id}, kv{"msg", strings.Repeat("x", size)})
}

// chunkFile writes records as one chunk file in dir.
func chunkFile(t *testing.T, dir, name string, recs ...[]byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, join(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedIDs counts how often each record id is stored in coll: entries of
// buckets, or flat documents. seqs maps each id to the seq of the bucket
// holding it.
func (e *env) storedIDs(coll string) (count map[string]int, seqs map[string]int) {
	e.t.Helper()
	return e.storedBy(coll, "id")
}

// storedBy counts the records of coll (bucket entries or flat documents)
// by the string value of field ("" where it is missing or not a string);
// seqs maps each value to the seq of a bucket holding it.
func (e *env) storedBy(coll, field string) (count map[string]int, seqs map[string]int) {
	e.t.Helper()
	count, seqs = map[string]int{}, map[string]int{}
	for _, d := range e.all(coll) {
		logs, ok := d.Lookup("logs").ArrayOK()
		if model.IsSealed(d) && !ok {
			continue // a stand-in (flat) or an empty sealed bucket: no record
		}
		if !ok { // flat
			v, _ := d.Lookup(field).StringValueOK()
			count[v]++
			continue
		}
		vals, err := logs.Values()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, en := range vals {
			v, _ := en.Document().Lookup(field).StringValueOK()
			count[v]++
			seqs[v] = int(d.Lookup("seq").AsInt64())
		}
	}
	return count, seqs
}

// checkOnce fails unless each of ids is stored exactly once and nothing
// else is.
func checkOnce(t *testing.T, count map[string]int, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
		if count[id] != 1 {
			t.Errorf("record %s stored %d times, want once", id, count[id])
		}
	}
	for id, n := range count {
		if !want[id] {
			t.Errorf("record %s stored %d times, never sent", id, n)
		}
	}
}

var deliveryModes = []string{"bucket", "flat"}

// modeProps are e's properties for mode; bucketKV apply in bucket mode only.
func (e *env) modeProps(mode string, bucketKV ...string) map[string]string {
	if mode != "bucket" {
		bucketKV = nil
	}
	return e.props(append([]string{"mode", mode}, bucketKV...)...)
}

// One group with 64K buckets: chunk A (one 40 KB record) opens bucket 0;
// chunk C (30 KB) does not fit and opens bucket 1, leaving room behind in
// bucket 0; chunk B (small) follows C into bucket 1. An agent restarted
// with nothing in memory gets chunk B again (Fluent Bit resends a chunk
// whose acknowledgement was lost, also across restarts with filesystem
// storage): it adds nothing, though bucket 0 has room for it.
func TestDeliveryResendAfterRestart(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
			a := chunkFile(t, dir, "a", idRecord(t, at, "A", 40000))
			c := chunkFile(t, dir, "c", idRecord(t, at.Add(time.Second), "C", 30000))
			b := chunkFile(t, dir, "b", idRecord(t, at.Add(2*time.Second), "B", 100))
			props := e.modeProps(mode, "bucket_max_bytes", "64K")
			e.init("a", props)
			for _, f := range []string{a, c, b} {
				e.mustFlush("a", "app", f)
			}
			e.exit("a")
			if mode == "bucket" {
				if _, seqs := e.storedIDs("logs"); seqs["A"] != 0 || seqs["C"] != 1 || seqs["B"] != 1 {
					t.Fatalf("buckets A:%d C:%d B:%d, want 0, 1, 1 (the case needs room left in bucket 0)", seqs["A"], seqs["C"], seqs["B"])
				}
			}

			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", b)
			e.exit("a")
			count, _ := e.storedIDs("logs")
			checkOnce(t, count, "A", "B", "C")
		})
	}
}

// Chunk B, then 300 one-record chunks of 1 KB into the same group (the
// buckets roll over several times), then B again after a restart: B is
// stored once. What a process remembers is gone; the server is not.
func TestDeliveryResendAfterTraffic(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
			b := chunkFile(t, dir, "b", idRecord(t, at, "B", 100))
			props := e.modeProps(mode, "bucket_max_bytes", "64K")
			e.init("a", props)
			e.mustFlush("a", "app", b)
			ids := []string{"B"}
			for i := 0; i < 300; i++ {
				id := fmt.Sprintf("r%03d", i)
				ids = append(ids, id)
				e.mustFlush("a", "app", chunkFile(t, dir, id, idRecord(t, at.Add(time.Duration(i+1)*100*time.Millisecond), id, 1024)))
			}
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", b)
			e.exit("a")
			count, seqs := e.storedIDs("logs")
			checkOnce(t, count, ids...)
			if mode == "bucket" && seqs["r299"] < 3 {
				t.Errorf("the traffic filled only %d buckets; the case needs several", seqs["r299"]+1)
			}
		})
	}
}

// Within one process: chunk B's write applies but its reply is lost and
// the server goes away, so B is answered Retry; then 300 one-record chunks
// roll the group's buckets over several times; B's resend is stored once.
func TestDeliveryResendAfterRetryAndTraffic(t *testing.T) {
	e := newDBEnv(t)
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	b := idRecord(t, at, "B", 100)
	opt := sinkOptions(1000, 64<<10)
	fs := &faultStore{Store: e.store(), failAt: 1, err: errTimeout, apply: true, down: true}
	s := e.newSink(opt, fs, fs.retry())
	flushSink(t, s, "app", b, sink.Retry)
	fs.heal()
	ids := []string{"B"}
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("r%03d", i)
		ids = append(ids, id)
		flushSink(t, s, "app", idRecord(t, at.Add(time.Duration(i+1)*100*time.Millisecond), id, 1024), sink.Done)
	}
	flushSink(t, s, "app", b, sink.Done)
	count, seqs := e.storedIDs("logs")
	checkOnce(t, count, ids...)
	if seqs["r299"] < 3 {
		t.Errorf("the traffic filled only %d buckets; the case needs several", seqs["r299"]+1)
	}
}

// resendInNewProcess sends file again as Fluent Bit resends a chunk it
// was answered FLB_OK for: never in the same process (where the same bytes
// are a new chunk), but after a stop with filesystem storage, when the
// acknowledgement may not have been kept. Instance id exits, the agent
// restarts and id is initialised with props again before the flush.
func (e *env) resendInNewProcess(id string, props map[string]string, tag, file string) {
	e.t.Helper()
	e.exit(id)
	e.restartHost()
	e.init(id, props)
	e.mustFlush(id, tag, file)
}

// restartHost stops the plugin's host process and starts a new one: an
// agent restart, with nothing of the old process left.
func (e *env) restartHost() {
	e.t.Helper()
	if err := e.host.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.host = startHost(e.t)
}

// The same chunk flushed twice at once by one instance, both answered
// Done (two workers given identical chunks): stored twice, each copy whole.
// The flushes of one content take their turns, so the second writes the
// next generation instead of racing the first.
func TestDeliverySameChunkAtOnce(t *testing.T) {
	e := newDBEnv(t)
	chunk, _ := appSlice(t, 500)
	lim := limits{100, 64 << 10}
	s := e.newSink(sinkOptions(lim.records, lim.bytes), e.store(), fastRetry)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := s.Flush(t.Context(), "app.log", chunk); res.Status != sink.Done || res.Stored != 500 {
				t.Errorf("flush: %v (%v), %d stored", res.Status, res.Err, res.Stored)
			}
		}()
	}
	wg.Wait()
	want := decodeFixture(t, chunk, parser.Options{})
	sameEntries(t, checkBuckets(t, e.all("logs"), lim), append(want, want...))
}
