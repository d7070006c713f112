package e2e

// Instance-level boundary tests against the test server, without the .so:
// concurrent flushes (run this package with -race to check them), Exit with
// writes in flight, and a goroutine leak check of New + Flush + Exit.
//
//	go test -race ./e2e -run 'BoundaryRace|BoundaryExit'

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/goleak"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

func newInstance(t *testing.T, e *env, log *harness.Buffer, kv ...string) *instance.Instance {
	t.Helper()
	m := conf.Map{}
	for k, v := range e.props(kv...) {
		m.Set(k, v)
	}
	in, err := instance.New(m, "mongodb.0", log)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Concurrent flushes of one instance through the real driver (distinct
// chunks, several tags, so flushes share buckets): all end done, every
// record stored once. A flush that runs out of time (the test server is slow
// under -race) is retried with the identical bytes, as Fluent Bit does. The
// chunks are small so the race build stays fast; the 5000-record chunk is
// flushed concurrently through the .so in TestBoundaryConcurrentFlushes.
func TestBoundaryRaceInstance(t *testing.T) {
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			log := &harness.Buffer{}
			kv := []string{"mode", mode, "max_inflight", "2"}
			if mode == "bucket" {
				kv = append(kv, "count_by", "level")
			}
			in := newInstance(t, e, log, kv...)
			files := map[string]int{"chunk-apache2-8.msgpack": 8, "chunk-nginx-8.msgpack": 8,
				"chunk-dummy-3.msgpack": 3, "chunk-dummy-metadata-2.msgpack": 2}
			var wg sync.WaitGroup
			want := 0
			for name, n := range files {
				data := readFixture(t, name)
				for _, tag := range []string{"t1", "t2", "t3"} {
					want += n
					wg.Add(1)
					go func() {
						defer wg.Done()
						for attempt := 1; in.Flush(tag, data) != sink.Done; attempt++ {
							if attempt == 3 {
								t.Errorf("flush %s %s: not done after %d attempts", tag, name, attempt)
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			in.Exit()
			docs := e.all("logs")
			entries := docs
			if mode == "bucket" {
				entries = checkBuckets(t, docs, defaultLimits)
			}
			if len(entries) != want {
				t.Errorf("%d records stored, want %d", len(entries), want)
			}
			if t.Failed() {
				t.Logf("log:\n%s", log)
			}
		})
	}
}

// Exit while a big chunk is being written: Exit waits for the flush, whose
// result is done (or retry past its deadline), never lost; a flush after
// Exit is retried.
func TestBoundaryExitInFlight(t *testing.T) {
	e := newDBEnv(t)
	log := &harness.Buffer{}
	in := newInstance(t, e, log, "max_inflight", "1")
	data := readFixture(t, "chunk-app-json-5000.msgpack")
	started := make(chan struct{})
	result := make(chan sink.Status, 1)
	go func() {
		close(started)
		result <- in.Flush("app.log", data)
	}()
	<-started
	// The flush is under way once the server holds something of it (or
	// it is over): waited for, as decoding 5000 records under -race on a
	// busy machine takes what it takes.
	var got sink.Status
	over := false
	for deadline := time.Now().Add(time.Minute); !over && time.Now().Before(deadline); {
		select {
		case got = <-result:
			over = true
		default:
			if n, err := e.db.Collection("logs").CountDocuments(context.Background(), bson.D{}); err == nil && n > 0 {
				in.Exit()
				select {
				case got = <-result:
				default:
					t.Fatal("Exit returned before the flush in flight")
				}
				over = true
			}
			time.Sleep(time.Millisecond)
		}
	}
	if !over {
		t.Fatal("the flush stored nothing in a minute")
	}
	in.Exit()
	if in.Flush("app.log", data) != sink.Retry {
		t.Error("a flush after Exit was not retried")
	}
	entries := checkBuckets(t, e.all("logs"), defaultLimits)
	switch got {
	case sink.Done:
		if len(entries) != 5000 {
			t.Errorf("flush done but %d records stored, want 5000", len(entries))
		}
		checkSeqs(t, entries, 5000)
	case sink.Retry:
		t.Logf("flush in flight retried; %d records stored so far", len(entries))
	default:
		t.Errorf("flush in flight: %v", got)
	}
	if !strings.Contains(log.String(), "stopped:") {
		t.Errorf("no stop line:\n%s", log)
	}
}

// Exit stops every goroutine the instance started: the start-up ping, the
// flush workers and the driver's monitors and pools.
func TestBoundaryExitNoLeak(t *testing.T) {
	e := newDBEnv(t)
	data := readFixture(t, "chunk-app-json-5000.msgpack")
	// The in-process FerretDB opens a SQLite database (with a
	// database/sql opener goroutine) the first time a database is used:
	// use it first, so that is not counted against the instance.
	if _, err := e.db.Collection("warmup").InsertOne(context.Background(), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	opts := []goleak.Option{
		goleak.IgnoreCurrent(), // the test server and the test's own client
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"), // FerretDB's SQLite, never the plugin
	}
	log := &harness.Buffer{}
	in := newInstance(t, e, log, "stats", "cost", "count_by", "level")
	if got := in.Flush("app.log", data); got != sink.Done {
		t.Fatalf("flush: %v\n%s", got, log)
	}
	in.Exit()
	if err := goleak.Find(opts...); err != nil {
		t.Errorf("goroutines left after Exit: %v", err)
	}

	// Also with the server unreachable (the ping, and the retention
	// applied at start, still waiting for it at Exit).
	bad := conf.Map{"uri": "mongodb://127.0.0.1:1/", "connect_timeout": "5s", "ttl": "12h", "partition": "day", "partition_keep": "3"}
	in, err := instance.New(bad, "mongodb.1", log)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	in.Exit()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Exit with the server unreachable took %v", d)
	}
	if err := goleak.Find(opts...); err != nil {
		t.Errorf("goroutines left after Exit with the server unreachable: %v", err)
	}
}
