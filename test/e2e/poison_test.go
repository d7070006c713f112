package e2e

// A record the server chokes on. Some MongoDB-compatible servers close the
// connection on values they do not support (the test server does so for
// NaN and Decimal128, which MongoDB stores). Such a write fails with a
// network error every time while the server answers everything else: the
// plugin must not stall on it until Fluent Bit drops the whole chunk, but
// find the record, park it with the reason and store the rest.

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// chokeChunk writes a chunk of n records with ids r000..., where the
// records at the indexes of bad carry a value the test server closes the
// connection on.
func chokeChunk(t *testing.T, n int, bad map[int]any) (string, []string) {
	t.Helper()
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("r%03d", i)
		body := []kv{{"id", id}, {"msg", "hello"}}
		if v, ok := bad[i]; ok {
			body = append(body, kv{"v", v})
		}
		recs = append(recs, record(t, at.Add(time.Duration(i)*10*time.Millisecond), body...))
		ids = append(ids, id)
	}
	return chunkFile(t, t.TempDir(), "choke", recs...), ids
}

// parkedIDs returns the ids of the records in the dead-letter collection,
// with their reasons.
func (e *env) parkedIDs() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, d := range e.all("logs_dead") {
		_, raw := d.Lookup("raw").Binary()
		out[bson.Raw(raw).Lookup("id").StringValue()] = d.Lookup("reason").StringValue()
	}
	return out
}

// checkStoredOrParked checks every id is stored or parked, exactly once in
// all; on the test server the records at bad must be the ones parked.
func (e *env) checkStoredOrParked(ids []string, bad map[int]any) {
	e.t.Helper()
	count, _ := e.storedIDs("logs")
	parked := e.parkedIDs()
	for i, id := range ids {
		reason, isParked := parked[id]
		if n := count[id]; n+b2i(isParked) != 1 {
			e.t.Errorf("record %s stored %d times and parked %v, want exactly one of them", id, n, isParked)
		}
		if _, chokes := bad[i]; chokes && !e.srv.Real {
			if !isParked || !strings.Contains(reason, "closed the connection") {
				e.t.Errorf("record %s (a value the test server closes the connection on): parked %v, reason %q", id, isParked, reason)
			}
		} else if isParked {
			e.t.Errorf("record %s parked, a good record: %s", id, reason)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

var chokeValues = map[int]any{9: math.NaN(), 23: uint64(math.MaxUint64)}

// One flush: the bad records are parked with the reason, the rest stored
// once, and the chunk acknowledged.
func TestDeliveryRecordServerChokesOn(t *testing.T) {
	t.Parallel() // waits on lost connections, not the CPU
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			chunk, ids := chokeChunk(t, 32, chokeValues)
			e.init("a", e.props("mode", mode, "flush_timeout", "5m"))
			e.mustFlush("a", "app", chunk)
			e.exit("a")
			e.checkStoredOrParked(ids, chokeValues)
		})
	}
}

// The same in bulk: a bucket per record, so the bad records share update
// commands of write_batch (20) statements with good ones. A command the
// server drops the connection on twice is sent a statement at a time, and
// each statement's own search finds the record.
func TestDeliveryRecordServerChokesOnInBulk(t *testing.T) {
	t.Parallel() // waits on lost connections, not the CPU
	e := newEnv(t)
	chunk, ids := chokeChunk(t, 32, chokeValues)
	e.init("a", e.props("bucket_key", "id", "bucket_window", "0", "flush_timeout", "5m"))
	e.mustFlush("a", "app", chunk)
	e.exit("a")
	e.checkStoredOrParked(ids, chokeValues)
}

// The search outlasts flush_timeout: the chunk is retried, each attempt
// goes on where the last left off, and it ends acknowledged with every
// record stored or parked once.
func TestDeliveryRecordServerChokesOnAcrossAttempts(t *testing.T) {
	t.Parallel() // waits on lost connections, not the CPU
	if _, real := mongotest.External(); real {
		t.Skip("MONGO_URI is set: MongoDB stores the values the test server chokes on, so there is no search to outlast")
	}
	bad := map[int]any{200: math.NaN()}
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			chunk, ids := chokeChunk(t, 256, bad)
			e.init("a", e.props("mode", mode, "flush_timeout", "3s"))
			// 4 to 10 attempts here on a quiet machine; ten times that
			// before giving up, as a loaded one slows every drop round
			// (each attempt goes on with the search: see
			// TestDeliveryRecordServerChokesOnResumedSearch). The 100
			// attempts of 3 s end well within the package's timeout, so
			// a search that never ends fails here, with the plugin's log.
			attempts := 0
			for rc := harness.FLBRetry; rc != harness.FLBOK; attempts++ {
				if attempts == 100 {
					t.Fatalf("no end after %d attempts\n%s", attempts, e.host.Stderr())
				}
				if rc = e.flush("a", "app", chunk); rc != harness.FLBOK && rc != harness.FLBRetry {
					t.Fatalf("flush: rc %d", rc)
				}
			}
			e.exit("a")
			t.Logf("%d attempts", attempts)
			e.checkStoredOrParked(ids, bad)
		})
	}
}

// chokeStore loses the connection on every insert into logs that holds a
// document with a "v" field (chokeChunk's bad records), storing none of it, as some servers do on
// values they do not support; at the cut-th such insert it also ends the
// flush (cancel), as its deadline would. It counts, by _id, the documents
// each attempt sends (see next).
type chokeStore struct {
	writer.Store
	cut    int
	cancel context.CancelFunc

	mu     sync.Mutex
	chokes int
	sent   map[string]int
}

func (c *chokeStore) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if coll != "logs" {
		return c.Store.InsertMany(ctx, coll, docs)
	}
	c.mu.Lock()
	choke := false
	for _, d := range docs {
		c.sent[d.Lookup("_id").String()]++
		if _, err := d.LookupErr("v"); err == nil {
			choke = true
		}
	}
	if choke {
		if c.chokes++; c.chokes == c.cut && c.cancel != nil {
			c.cancel()
		}
	}
	c.mu.Unlock()
	if choke {
		return errNetwork
	}
	return c.Store.InsertMany(ctx, coll, docs)
}

// next starts the count of another attempt, on ctx's cancel.
func (c *chokeStore) next(cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent, c.cancel = map[string]int{}, cancel
}

// A search for the record the server chokes on, cut off by the flush's
// deadline when it has narrowed to a few documents per insert, goes on in
// the chunk's next attempt without sending again what is stored: the
// documents are looked up first. Sent again a few at a time, each insert
// answered DuplicateKey and looked up, they took an attempt's time on a
// slow server before the search was reached, every attempt, and the chunk
// never ended.
func TestDeliveryRecordServerChokesOnResumedSearch(t *testing.T) {
	e := newDBEnv(t)
	const bad = 900
	file, ids := chokeChunk(t, 1000, map[int]any{bad: true})
	chunk, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	opt := sinkOptions(0, 0)
	opt.Mode = model.ModeFlat
	// The 10th choke falls on an insert of 4 documents: 1000 split in
	// halves down to the bad record's 4.
	cs := &chokeStore{Store: e.store(), cut: 10}
	s := e.newSink(opt, cs, fastRetry)
	storedIDs := func() map[string]bool {
		out := map[string]bool{}
		for _, d := range e.all("logs") {
			out[d.Lookup("_id").String()] = true
		}
		return out
	}
	for attempt := 1; ; attempt++ {
		if attempt > 10 {
			t.Fatalf("no end after %d attempts", attempt-1)
		}
		before := storedIDs()
		ctx, cancel := context.WithCancel(t.Context())
		cs.next(cancel)
		res := s.Flush(ctx, "app", chunk)
		cancel()
		again := 0
		for id, k := range cs.sent {
			if before[id] {
				again += k
			}
		}
		t.Logf("attempt %d: %v, %d documents sent, %d of them stored before it", attempt, res.Status, len(cs.sent), again)
		if again > 0 {
			t.Errorf("attempt %d sent documents stored before it %d times", attempt, again)
		}
		if attempt == 1 && (res.Status != sink.Retry || len(before) > 0) {
			t.Fatalf("attempt 1: %v (%v), want it cut off mid-search", res.Status, res.Err)
		}
		if res.Status == sink.Done {
			break
		}
		if res.Status != sink.Retry {
			t.Fatalf("attempt %d: %v (%v)", attempt, res.Status, res.Err)
		}
	}
	count, _ := e.storedIDs("logs")
	parked := e.parkedIDs()
	for i, id := range ids {
		_, isParked := parked[id]
		if count[id]+b2i(isParked) != 1 || isParked != (i == bad) {
			t.Errorf("record %s: stored %d times, parked %v", id, count[id], isParked)
		}
	}
	if why := parked[ids[bad]]; !strings.Contains(why, "closed the connection") {
		t.Errorf("the bad record parked for %q", why)
	}
}
