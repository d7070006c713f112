package instance

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// These tests need no server: the URI points at a closed port, and the sink
// writes through a fake store (NewWith's Seams.Wrap). make unit runs them
// with the race detector. The same paths against a real server are covered
// by test/e2e/boundary_*_test.go.

// syncBuffer is a log writer safe to read while instances write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits up to 5s for sub to appear in the log.
func (b *syncBuffer) waitFor(sub string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(b.String(), sub) {
			return true
		}
	}
	return false
}

// fakeStore accepts every write and counts flat documents. hook, if set,
// runs first in every call (to block or panic).
type fakeStore struct {
	hook    func(ctx context.Context) error
	mu      sync.Mutex
	docs    int
	upserts int
}

func (f *fakeStore) run(ctx context.Context) error {
	if f.hook != nil {
		return f.hook(ctx)
	}
	return nil
}

func (f *fakeStore) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	errs := make([]error, len(ups))
	if err := f.run(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.upserts += len(ups)
	return errs
}

func (f *fakeStore) Ping(ctx context.Context) error { return f.run(ctx) }

func (f *fakeStore) UpdateMany(ctx context.Context, _ string, _, _ bson.Raw) error { return f.run(ctx) }

func (f *fakeStore) Find(ctx context.Context, coll string, filter bson.Raw, _ writer.Query) ([]bson.Raw, error) {
	return nil, f.run(ctx)
}

func (f *fakeStore) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := f.run(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.docs += len(docs)
	return nil
}

func (f *fakeStore) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	return f.InsertMany(ctx, coll, docs)
}

// testConfig is a valid configuration on a closed port, without index
// creation (which would need the server), with kv applied on top.
func testConfig(kv ...string) conf.Map {
	m := conf.Map{
		"uri":             "mongodb://127.0.0.1:1/",
		"database":        "db",
		"collection":      "logs",
		"create_indexes":  "off",
		"connect_timeout": "1s",
		"flush_timeout":   "2s",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	return m
}

func newTest(t *testing.T, store *fakeStore, kv ...string) (*Instance, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	in, err := NewWith(testConfig(kv...), "mongodb.0", log, Seams{Wrap: func(writer.Store) writer.Store { return store }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Exit)
	return in, log
}

func chunk(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "test", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A panic below a flush, on the flush goroutine (flat mode) or on a bucket
// writer goroutine (bucket mode), becomes a retry, and the log has the stack.
func TestPanicBelowFlushIsRetried(t *testing.T) {
	for _, mode := range []string{"flat", "bucket"} {
		t.Run(mode, func(t *testing.T) {
			store := &fakeStore{hook: func(context.Context) error { panic("injected store failure") }}
			in, log := newTest(t, store, "mode", mode)
			if got := in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")); got != sink.Retry {
				t.Fatalf("Flush = %v, want retry", got)
			}
			out := log.String()
			for _, want := range []string{"panic", "injected store failure", "instance_test.go", "goroutine "} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %q:\n%s", want, out)
				}
			}
			// The instance still works once the fault is gone.
			store.mu.Lock()
			store.hook = nil
			store.mu.Unlock()
			if got := in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")); got != sink.Done {
				t.Fatalf("Flush after the fault = %v, want done\n%s", got, log)
			}
		})
	}
}

// Exit waits for a flush in flight; the flush completes (done), later
// flushes are retried, and a second Exit does nothing.
func TestExitWaitsForFlushInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	store := &fakeStore{}
	store.hook = func(ctx context.Context) error {
		once.Do(func() { close(entered) })
		<-release
		return nil
	}
	in, log := newTest(t, store, "mode", "flat")
	result := make(chan sink.Status, 1)
	go func() { result <- in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")) }()
	<-entered
	exited := make(chan struct{})
	go func() { in.Exit(); close(exited) }()
	select {
	case <-exited:
		t.Fatal("Exit returned while a flush was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("Exit did not return after the flush ended")
	}
	if got := <-result; got != sink.Done {
		t.Errorf("flush in flight = %v, want done", got)
	}
	if store.docs != 3 {
		t.Errorf("%d documents written, want 3", store.docs)
	}
	if got := in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")); got != sink.Retry {
		t.Errorf("Flush after Exit = %v, want retry", got)
	}
	in.Exit()
	if n := strings.Count(log.String(), "stopped:"); n != 1 {
		t.Errorf("%d stop lines, want 1 (Exit twice must be a no-op):\n%s", n, log)
	}
}

// A flush stuck in the store at Exit ends at its flush_timeout with a
// retry: never lost, never crashed; Exit returns after it.
func TestExitWithStuckFlush(t *testing.T) {
	entered := make(chan struct{})
	var once sync.Once
	var active atomic.Int32 // store calls in flight
	store := &fakeStore{hook: func(ctx context.Context) error {
		active.Add(1)
		defer active.Add(-1)
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	in, _ := newTest(t, store, "mode", "flat", "flush_timeout", "1s")
	result := make(chan sink.Status, 1)
	go func() { result <- in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")) }()
	<-entered
	start := time.Now()
	in.Exit()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Exit took %v", d)
	}
	if n := active.Load(); n != 0 {
		t.Errorf("Exit returned with %d store calls of the flush in flight", n)
	}
	// The flush has returned by now; its result reaches the channel just
	// after.
	select {
	case got := <-result:
		if got != sink.Retry {
			t.Errorf("stuck flush = %v, want retry", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the flush in flight did not end")
	}
}

// Concurrent flushes of different chunks on one instance (Fluent Bit with
// Workers N) all succeed and write each record once; run with -race.
func TestConcurrentFlushes(t *testing.T) {
	files := map[string]int{
		"chunk-dummy-3.msgpack":          3,
		"chunk-dummy-metadata-2.msgpack": 2,
		"chunk-apache2-8.msgpack":        8,
		"chunk-nginx-8.msgpack":          8,
		"chunk-app-json-5000.msgpack":    5000,
	}
	for _, mode := range []string{"flat", "bucket"} {
		t.Run(mode, func(t *testing.T) {
			store := &fakeStore{}
			in, log := newTest(t, store, "mode", mode, "plugin_log_level", "debug")
			var wg sync.WaitGroup
			want := 0
			for name, n := range files {
				data := chunk(t, name)
				for _, tag := range []string{"a", "b"} {
					want += n
					wg.Add(1)
					go func() {
						defer wg.Done()
						if got := in.Flush(tag, data); got != sink.Done {
							t.Errorf("Flush %s %s = %v\n%s", tag, name, got, log)
						}
					}()
				}
			}
			wg.Wait()
			if mode == "flat" && store.docs != want {
				t.Errorf("%d documents written, want %d", store.docs, want)
			}
			if mode == "bucket" && store.upserts == 0 {
				t.Error("no bucket written")
			}
		})
	}
}

// Log lines carry the instance name, instance_name replaces the default,
// the level filters, and the URI password never appears.
func TestLogging(t *testing.T) {
	log := &syncBuffer{}
	in, err := New(testConfig("uri", "mongodb://fluent:s3cr3t-pw@127.0.0.1:1/?authSource=admin",
		"instance_name", "logs-main"), "mongodb.7", log)
	if err != nil {
		t.Fatal(err)
	}
	if !log.waitFor("not reachable") {
		t.Errorf("no warning for an unreachable server:\n%s", log)
	}
	in.Exit()
	out := log.String()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "    ") { // continuation of a multi-line message
			continue
		}
		if !strings.Contains(line, "] [out_mongodb:logs-main] ") {
			t.Errorf("line without the instance prefix: %q", line)
		}
	}
	if strings.Contains(out, "s3cr3t-pw") {
		t.Errorf("password in the log:\n%s", out)
	}
	if strings.Contains(out, "mongodb.7") {
		t.Errorf("default name used despite instance_name:\n%s", out)
	}
	if !strings.Contains(out, "collection logs, mode bucket; out_mongodb "+version.String()+"\n") {
		t.Errorf("the start-up line does not end with the version:\n%s", out)
	}
	if !strings.Contains(out, "settings other than the defaults: database=db flush_timeout=2s connect_timeout=1s create_indexes=off instance_name=logs-main\n") {
		t.Errorf("the start-up line of changed settings is missing or wrong:\n%s", out)
	}

	log = &syncBuffer{}
	in, err = New(testConfig("plugin_log_level", "error"), "mongodb.3", log)
	if err != nil {
		t.Fatal(err)
	}
	in.Exit()
	if out := log.String(); out != "" {
		t.Errorf("plugin_log_level error logged info lines:\n%s", out)
	}
}

// A uri that turns TLS verification off is warned of at start-up; one
// that does not, is not.
func TestInsecureTLSWarned(t *testing.T) {
	for uri, want := range map[string]bool{
		"mongodb://127.0.0.1:1/?tls=true&tlsInsecure=true":                 true,
		"mongodb://127.0.0.1:1/?tls=true&tlsAllowInvalidCertificates=true": true,
		"mongodb://127.0.0.1:1/?tls=true&tlsAllowInvalidHostnames=true":    true,
		"mongodb://127.0.0.1:1/?tls=true":                                  false,
	} {
		log := &syncBuffer{}
		in, err := New(testConfig("uri", uri), "mongodb.0", log)
		if err != nil {
			t.Fatal(err)
		}
		in.Exit()
		if got := strings.Contains(log.String(), "warn] [out_mongodb:mongodb.0] the uri says tls"); got != want {
			t.Errorf("%s: warned %v, want %v:\n%s", uri, got, want, log)
		}
	}
}

// With plugin_log_level debug every flush logs its summary line.
func TestDebugFlushSummary(t *testing.T) {
	in, log := newTest(t, &fakeStore{}, "plugin_log_level", "debug")
	if got := in.Flush("app", chunk(t, "chunk-dummy-3.msgpack")); got != sink.Done {
		t.Fatalf("Flush = %v", got)
	}
	if !strings.Contains(log.String(), "[debug] [out_mongodb:mongodb.0] chunk ") ||
		!strings.Contains(log.String(), "3 records, 3 stored") {
		t.Errorf("no per-flush summary at debug:\n%s", log)
	}
}

// uri_env reads the environment the seams give (mongolog's commands run
// in-process with an environment of their own), the process's without.
func TestURIEnvFromSeams(t *testing.T) {
	const name = "OUT_MONGODB_TEST_URI_ONLY_IN_SEAMS"
	m := conf.Map{}
	m.Set("uri_env", name)
	env := func(k string) string {
		if k == name {
			return "mongodb://127.0.0.1:1/"
		}
		return ""
	}
	in, err := NewWith(m, "mongodb.0", &bytes.Buffer{}, Seams{Getenv: env})
	if err != nil {
		t.Fatalf("uri_env set in the seams' environment: %v", err)
	}
	in.Exit()
	if _, err := NewWith(m, "mongodb.0", &bytes.Buffer{}, Seams{}); err == nil || !strings.Contains(err.Error(), "uri_env") {
		t.Errorf("uri_env unset in the process's environment: %v, want an error naming uri_env", err)
	}
}
