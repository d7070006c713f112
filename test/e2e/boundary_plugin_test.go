package e2e

// The plugin boundary, through the real .so and fbhost: several instances
// at once, concurrent flushes, bad configuration, a server down at Init, hot
// reload and the log.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

// Three instances at once, in different modes and collections. All are
// initialised before the first flush (as Fluent Bit does), so the shared
// plugin pointer answers for the last one: each must have kept its own
// configuration.
func TestBoundaryThreeInstances(t *testing.T) {
	e := newEnv(t)
	e.init("a", e.props("collection", "a_buckets", "instance_name", "inst-a"))
	e.init("b", e.props("collection", "b_flat", "mode", "flat", "instance_name", "inst-b"))
	e.init("c", e.props("collection", "c_modules", "bucket_key", "module", "stats", "cost",
		"count_by", "level", "instance_name", "inst-c"))
	e.mustFlush("a", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.mustFlush("b", "web.access", fixture("chunk-apache2-8.msgpack"))
	e.mustFlush("c", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.exit("a")
	e.exit("b")
	e.exit("c")

	// a: default buckets keyed by the tag, no stats or counts.
	docs := e.all("a_buckets")
	entries := checkBuckets(t, docs, defaultLimits)
	if len(entries) != 5000 {
		t.Errorf("a: %d entries, want 5000", len(entries))
	}
	checkSeqs(t, entries, 5000)
	for _, d := range docs {
		if k := d.Lookup("key").Document().String(); k != `{"tag": "app.log"}` {
			t.Errorf("a: bucket key %s, want the tag only", k)
		}
		if _, ok := d.Lookup("stats").DocumentOK(); ok {
			t.Errorf("a: bucket has stats (c's configuration leaked)")
		}
		if _, ok := d.Lookup("counts").DocumentOK(); ok {
			t.Errorf("a: bucket has counts (c's configuration leaked)")
		}
	}

	// b: one document per record, with the tag.
	flat := e.all("b_flat")
	if len(flat) != 8 {
		t.Errorf("b: %d documents, want 8", len(flat))
	}
	for _, d := range flat {
		if tag := d.Lookup("tag").StringValue(); tag != "web.access" {
			t.Errorf("b: tag %q, want web.access", tag)
		}
		if _, ok := d.Lookup("logs").ArrayOK(); ok {
			t.Errorf("b: a bucket in the flat collection: %v", d)
		}
	}

	// c: buckets per module, with stats of cost and counts of level
	// (checkBuckets recomputes both).
	docs = e.all("c_modules")
	entries = checkBuckets(t, docs, defaultLimits)
	if len(entries) != 5000 {
		t.Errorf("c: %d entries, want 5000", len(entries))
	}
	checkSeqs(t, entries, 5000)
	modules := map[string]bool{}
	for _, d := range docs {
		m, ok := d.Lookup("key", "module").StringValueOK()
		if !ok {
			t.Fatalf("c: bucket key without module: %v", d.Lookup("key"))
		}
		modules[m] = true
		if _, ok := d.Lookup("stats", "cost").DocumentOK(); !ok {
			t.Errorf("c: bucket without stats.cost")
		}
		if _, ok := d.Lookup("counts", "level").DocumentOK(); !ok {
			t.Errorf("c: bucket without counts.level")
		}
	}
	if len(modules) < 2 {
		t.Errorf("c: buckets of %d modules, want several", len(modules))
	}
	// Nothing landed outside the three collections.
	if n := len(e.all("logs")); n != 0 {
		t.Errorf("%d documents in the default collection", n)
	}

	log := e.host.Stderr()
	for _, want := range []string{
		"[out_mongodb:inst-a] writing to", "collection a_buckets, mode bucket",
		"[out_mongodb:inst-b] writing to", "collection b_flat, mode flat",
		"[out_mongodb:inst-c] writing to", "collection c_modules, mode bucket",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// Concurrent flushes of different chunks on one instance (Workers N): every
// flush returns FLB_OK and every record is stored exactly once.
func TestBoundaryConcurrentFlushes(t *testing.T) {
	for _, mode := range []string{"bucket", "flat"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			e.init("a", e.props("mode", mode))
			files := []string{"chunk-app-json-5000.msgpack", "chunk-apache2-8.msgpack",
				"chunk-nginx-8.msgpack", "chunk-dummy-3.msgpack", "chunk-dummy-metadata-2.msgpack"}
			want := 5000 + 8 + 8 + 3 + 2
			paths := make([]string, len(files))
			for i, f := range files {
				paths[i] = fixture(f)
			}
			rcs, err := e.host.FlushConcurrent("a", "mixed", paths)
			if err != nil {
				t.Fatal(err)
			}
			for i, rc := range rcs {
				if rc != harness.FLBOK {
					t.Errorf("flush %s: rc %d, want FLB_OK", files[i], rc)
				}
			}
			e.exit("a")
			docs := e.all("logs")
			var entries []bson.Raw
			if mode == "bucket" {
				entries = checkBuckets(t, docs, defaultLimits)
			} else {
				entries = docs
			}
			if len(entries) != want {
				t.Errorf("%d records stored, want %d", len(entries), want)
			}
			var app []bson.Raw
			for _, en := range entries {
				if _, ok := en.Lookup("seq").AsInt64OK(); ok {
					app = append(app, en)
				}
			}
			checkSeqs(t, app, 5000)
			if n := len(e.all("logs_dead")); n != 0 {
				t.Errorf("%d records parked", n)
			}
		})
	}
}

// Several bad keys at once: Init fails, and one log names every key, its
// value and what is allowed.
func TestBoundaryBadConfig(t *testing.T) {
	h := startHost(t)
	rc, err := h.Init("bad", map[string]string{
		"uri":                "mongodb://fluent:hunter2-secret@127.0.0.1:1/",
		"mode":               "tree",
		"bucket_window":      "7s",
		"bucket_max_records": "0",
		"plugin_log_level":   "loud",
		"flush_timeout":      "soon",
	})
	if err != nil {
		t.Fatal(err)
	}
	if rc != harness.FLBError {
		t.Fatalf("init rc %d, want FLB_ERROR (%d)", rc, harness.FLBError)
	}
	if !waitLog(h, "flush_timeout") {
		t.Fatalf("no configuration error logged:\n%s", h.Stderr())
	}
	log := h.Stderr()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`mode: invalid value "tree": .*bucket.*flat`),
		regexp.MustCompile(`bucket_window: invalid value "7s": .*divide 24h`),
		regexp.MustCompile(`bucket_max_records: invalid value "0": .*1.*100000`),
		regexp.MustCompile(`plugin_log_level: invalid value "loud": .*error.*warn.*info.*debug`),
		regexp.MustCompile(`flush_timeout: invalid value "soon": .*`),
	} {
		if !want.MatchString(log) {
			t.Errorf("log does not match %s", want)
		}
	}
	if !strings.Contains(log, "[error] [out_mongodb:mongodb.0] invalid configuration") {
		t.Errorf("the error is not logged in Fluent Bit's format with the instance name")
	}
	if strings.Contains(log, "hunter2-secret") {
		t.Errorf("password in the log")
	}
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}
}

// The server is down at Init: Init succeeds and warns, flushes are retried;
// once the server is up the same chunk is stored, once.
func TestBoundaryServerDownAtInit(t *testing.T) {
	if _, ok := mongotest.External(); ok {
		t.Skip("needs the in-process server, which the test can stop")
	}
	srv, err := mongotest.StartFerret(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	uri := srv.URI
	srv.Stop()

	h := startHost(t)
	props := map[string]string{"uri": uri, "database": "down", "collection": "logs",
		"flush_timeout": "2s", "connect_timeout": "1s", "instance_name": "down"}
	if rc, err := h.Init("a", props); err != nil || rc != harness.FLBOK {
		t.Fatalf("init with the server down: rc %d err %v\n%s", rc, err, h.Stderr())
	}
	if !waitLog(h, "[ warn] [out_mongodb:down] MongoDB is not reachable yet") {
		t.Errorf("no warning that the server is unreachable:\n%s", h.Stderr())
	}
	start := time.Now()
	rc, err := h.Flush("a", "app.log", fixture("chunk-dummy-3.msgpack"))
	if err != nil || rc != harness.FLBRetry {
		t.Fatalf("flush with the server down: rc %d err %v, want FLB_RETRY\n%s", rc, err, h.Stderr())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("flush with the server down took %v (flush_timeout 2s)", d)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Fluent Bit sends the identical chunk again; give the driver a few
	// retries to notice the server is back.
	for i := 0; ; i++ {
		rc, err = h.Flush("a", "app.log", fixture("chunk-dummy-3.msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		if rc == harness.FLBOK {
			break
		}
		if i == 4 {
			t.Fatalf("flush after the server came back: rc %d\n%s", rc, h.Stderr())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if rc, err := h.Exit("a"); err != nil || rc != harness.FLBOK {
		t.Fatalf("exit: rc %d err %v", rc, err)
	}
	docs := allDocs(t, srv.Client(t).Database("down").Collection("logs"))
	if len(docs) != 1 {
		t.Fatalf("%d buckets, want 1", len(docs))
	}
	if n := len(checkBuckets(t, docs, defaultLimits)); n != 3 {
		t.Errorf("%d records stored, want 3", n)
	}
}

func allDocs(t *testing.T, c *mongo.Collection) []bson.Raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Hot reload in one process: Fluent Bit exits the instances, unregisters,
// registers the plugin again and initialises new instances with the same
// configuration. Both generations store everything.
func TestBoundaryHotReload(t *testing.T) {
	e := newEnv(t)
	props := e.props("mode", "flat")
	for gen, id := range []string{"a", "b"} {
		if gen > 0 {
			if name, rc, err := e.host.Register(); err != nil || rc != 0 || name != "mongodb" {
				t.Fatalf("register again: name %q rc %d err %v", name, rc, err)
			}
		}
		e.init(id, props)
		e.mustFlush(id, fmt.Sprintf("gen%d", gen), fixture("chunk-apache2-8.msgpack"))
		e.exit(id)
		if rc, err := e.host.Unregister(); err != nil || rc != 0 {
			t.Fatalf("unregister: rc %d err %v", rc, err)
		}
	}
	docs := e.all("logs")
	if len(docs) != 16 {
		t.Errorf("%d documents, want 16 (8 per generation)", len(docs))
	}
	byTag := map[string]int{}
	for _, d := range docs {
		byTag[d.Lookup("tag").StringValue()]++
	}
	if byTag["gen0"] != 8 || byTag["gen1"] != 8 {
		t.Errorf("documents per tag %v, want 8 each", byTag)
	}
	// Fluent Bit numbers the outputs of the new context from 0 again.
	if n := strings.Count(e.host.Stderr(), "[out_mongodb:mongodb.0] writing to"); n != 2 {
		t.Errorf("%d start lines of mongodb.0, want 2:\n%s", n, e.host.Stderr())
	}
}

// Log lines: every plugin line has the Fluent Bit prefix and the instance
// name (instance_name or mongodb.N), debug shows the per-flush summary, and
// a password in the URI never appears.
func TestBoundaryLogs(t *testing.T) {
	e := newEnv(t)
	// A password the server does not know: the URI is otherwise the test
	// server's, so the flush fails (or, if the server ignores credentials,
	// succeeds); either way the password must not be logged.
	withPassword := strings.Replace(e.srv.URI, "mongodb://", "mongodb://fluent:pa55-w0rd-x@", 1)
	if strings.Contains(e.srv.URI, "@") {
		withPassword = regexp.MustCompile(`://[^@]*@`).ReplaceAllString(e.srv.URI, "://fluent:pa55-w0rd-x@")
	}
	e.init("named", e.props("instance_name", "logs-main", "plugin_log_level", "debug"))
	e.init("default", e.props("collection", "other"))
	e.init("secret", e.props("uri", withPassword, "collection", "secret",
		"plugin_log_level", "debug", "flush_timeout", "2s", "connect_timeout", "1s"))
	e.mustFlush("named", "app.log", fixture("chunk-dummy-3.msgpack"))
	e.mustFlush("default", "app.log", fixture("chunk-dummy-3.msgpack"))
	e.flush("secret", "app.log", fixture("chunk-dummy-3.msgpack"))
	e.exit("named")
	e.exit("default")
	e.exit("secret")

	log := e.host.Stderr()
	if strings.Contains(log, "pa55-w0rd-x") {
		t.Errorf("password in the log:\n%s", log)
	}
	if !strings.Contains(log, "xxxxx") {
		t.Errorf("no redacted URI in the log")
	}
	if !regexp.MustCompile(`(?m)^\[\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\] \[debug\] \[out_mongodb:logs-main\] chunk \w+ \(tag "app.log"\): 3 records, 3 stored`).MatchString(log) {
		t.Errorf("no per-flush debug summary for logs-main:\n%s", log)
	}
	if !strings.Contains(log, "[ info] [out_mongodb:mongodb.1] writing to") {
		t.Errorf("the second instance does not log as mongodb.1")
	}
	if regexp.MustCompile(`\[debug\] \[out_mongodb:mongodb.1\]`).MatchString(log) {
		t.Errorf("debug lines at the default level info")
	}
	line := regexp.MustCompile(`^\[\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\] \[(error| warn| info|debug)\] \[out_mongodb:(logs-main|mongodb\.1|mongodb\.2)\] `)
	for _, l := range strings.Split(log, "\n") {
		if l == "" || strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "fbhost:") {
			continue
		}
		if !line.MatchString(l) {
			t.Errorf("log line not in Fluent Bit's format with the instance: %q", l)
		}
	}
}
