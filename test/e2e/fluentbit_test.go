package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// fluentBit runs a real Fluent Bit (skipping the test when none is on PATH)
// with a classic configuration that loads the plugin through a plugins file,
// tails the app log with a JSON parser, and has service settings and
// outputs as given. It returns Fluent Bit's output once it has exited.
func fluentBit(t *testing.T, service, outputs string, during func()) string {
	t.Helper()
	fb, dir, conf := fluentBitConf(t, service, "    Exit_On_Eof    On\n", outputs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fb, "-c", conf)
	cmd.Dir = dir
	var out harness.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fluent-bit: %v\n%s", err, out.String())
	}
	return out.String()
}

// fluentBitConf finds fluent-bit on PATH (skipping the test when there is
// none) and writes its configuration into a new directory: the plugin
// loaded through a plugins file, the app log tailed with a JSON parser and
// the input settings given, and the service settings and outputs given.
func fluentBitConf(t *testing.T, service, input, outputs string) (fb, dir, conf string) {
	t.Helper()
	fb, err := exec.LookPath("fluent-bit")
	if err != nil {
		t.Skip("no fluent-bit on PATH; the host harness tests cover the same calls")
	}
	dir = t.TempDir()
	logFile, err := filepath.Abs(fixture("app-5000.log"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("plugins.conf", "[PLUGINS]\n    Path "+soPath+"\n")
	write("parsers.conf", `[PARSER]
    Name        app_json
    Format      json
    Time_Key    ts
    Time_Format %Y-%m-%dT%H:%M:%S.%LZ
    Time_Keep   On
`)
	conf = write("fluent-bit.conf", `[SERVICE]
    Flush        1
    Log_Level    info
    Plugins_File plugins.conf
    Parsers_File parsers.conf
`+service+`
[INPUT]
    Name           tail
    Path           `+logFile+`
    Tag            app.log
    Parser         app_json
    Read_From_Head On
`+input+`
`+outputs)
	return fb, dir, conf
}

// A real Fluent Bit, when one is on PATH, tails the app log through two
// outputs of the plugin at once (buckets with Workers 2, and flat): every
// line lands exactly once in each.
func TestRealFluentBit(t *testing.T) {
	e := newEnv(t)
	out := fluentBit(t, "", `[OUTPUT]
    Name        mongodb
    Match       app.*
    Workers     2
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  buckets
    bucket_key  module
    stats       cost
    count_by    level

[OUTPUT]
    Name        mongodb
    Match       app.*
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  flat
    mode        flat
`, nil)
	if !strings.Contains(out, "[out_mongodb:mongodb.1]") {
		t.Errorf("the second output did not log under its own name:\n%s", out)
	}
	entries := checkBuckets(t, e.all("buckets"), defaultLimits)
	checkSeqs(t, entries, 5000)
	if n := len(e.all("flat")); n != 5000 {
		t.Errorf("flat: %d documents, want 5000", n)
	}
	if t.Failed() {
		t.Logf("fluent-bit output:\n%s", out)
	}
}

// With MongoDB down when a real Fluent Bit starts, the plugin starts anyway,
// chunks are retried (Retry_Limit no_limits), and once the server is back
// every line lands exactly once, before Fluent Bit's shutdown grace ends.
func TestRealFluentBitServerDown(t *testing.T) {
	e := newEnv(t)
	if e.srv.Real {
		t.Skip("stops and restarts the server: only the in-process test server can be")
	}
	e.srv.Stop()
	out := fluentBit(t, "    Grace 60\n    scheduler.base 1\n    scheduler.cap 2\n", `[OUTPUT]
    Name            mongodb
    Match           app.*
    Retry_Limit     no_limits
    uri             `+e.srv.URI+`
    database        `+e.dbName+`
    collection      logs
    flush_timeout   2s
    connect_timeout 1s
`, func() {
		time.Sleep(5 * time.Second)
		if err := e.srv.Restart(); err != nil {
			t.Error(err)
		}
	})
	if !strings.Contains(out, "MongoDB is not reachable yet") || !strings.Contains(out, " is back after ") {
		t.Errorf("no sign of the outage in the log:\n%s", out)
	}
	entries := checkBuckets(t, e.all("logs"), defaultLimits)
	checkSeqs(t, entries, 5000)
	if t.Failed() {
		t.Logf("fluent-bit output:\n%s", out)
	}
}

// A real Fluent Bit with filesystem storage is killed (SIGKILL) while the
// plugin writes a chunk, and started again: it resends the chunks it had
// not seen acknowledged, one of them partly stored by the killed process.
// Every line lands exactly once.
func TestRealFluentBitKilledAndRestarted(t *testing.T) {
	e := newEnv(t)
	fb, dir, conf := fluentBitConf(t, "    storage.path store\n    storage.sync full\n",
		"    DB             tail.db\n    storage.type   filesystem\n", `[OUTPUT]
    Name               mongodb
    Match              app.*
    Workers            1
    Retry_Limit        no_limits
    uri                `+e.srv.URI+`
    database           `+e.dbName+`
    collection         logs
    bucket_max_records 100
    plugin_log_level   debug
`)
	count := func() int {
		n := 0
		for _, d := range e.all("logs") {
			n += int(d.Lookup("count").AsInt64())
		}
		return n
	}
	var out harness.Buffer
	start := func() *exec.Cmd {
		cmd := exec.Command(fb, "-c", conf)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	// Kill it once some buckets of the chunk are written, not all.
	cmd := start()
	deadline := time.Now().Add(2 * time.Minute)
	for n := count(); n < 200; n = count() {
		if time.Now().After(deadline) {
			t.Fatalf("nothing written in 2 minutes\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := count()
	if killedAt >= 5000 {
		t.Skip("the chunk was written whole before the kill; nothing to resend")
	}
	cmd = start()
	restarted := time.Now()
	for count() < 5000 && time.Now().Before(deadline.Add(2*time.Minute)) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all stored %v after the restart", time.Since(restarted))
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	entries := checkBuckets(t, e.all("logs"), defaultLimits)
	checkSeqs(t, entries, 5000)
	t.Logf("%d lines stored when killed", killedAt)
	if t.Failed() {
		t.Logf("fluent-bit output:\n%s", out.String())
	}
}

// A configuration error is logged through Fluent Bit's own log, so it reads
// in order: after Fluent Bit's start-up lines and right before its line
// saying the plugin failed to initialize.
func TestRealFluentBitStartupErrorInOrder(t *testing.T) {
	fb, dir, conf := fluentBitConf(t, "", "", `[OUTPUT]
    Name  mongodb
    Match *
    uri   mongodb://127.0.0.1:1
    mode  tree
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fb, "-c", conf)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("fluent-bit started with an invalid output:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "[") {
			lines = append(lines, l)
		}
	}
	index := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i
			}
		}
		t.Fatalf("no line with %q:\n%s", sub, out)
		return -1
	}
	started, head, reason, failed := index("[fluent bit] version="), index("invalid configuration, the output is not started"),
		index(`mode: invalid value "tree"`), index("plugin 'mongodb' failed to initialize")
	if !(started < head && head+1 == reason && reason+1 == failed) {
		t.Errorf("lines out of order (start %d, error %d, reason %d, failed %d):\n%s", started, head, reason, failed, strings.Join(lines, "\n"))
	}
}

// What mongolog check says of Fluent Bit's own keys holds in a real Fluent
// Bit: host, port, tls.verify, tls.ca_file and Alias never reach the plugin,
// which connects in plain text to the uri's host and logs under its own
// name, and tls on stops Fluent Bit at start.
func TestRealFluentBitKeepsItsKeys(t *testing.T) {
	e := newEnv(t)
	if e.srv.Real {
		t.Skip("the uri given by MONGO_URI may use TLS itself; the test server's does not")
	}
	out := fluentBit(t, "", `[OUTPUT]
    Name        mongodb
    Match       app.*
    Alias       audit
    Workers     1
    Host        192.0.2.1
    Port        1
    tls.verify  on
    tls.ca_file /nonexistent/ca.pem
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  logs
    mode        flat
`, nil)
	if n := len(e.all("logs")); n != 5000 {
		t.Errorf("%d documents, want 5000 through the uri's host", n)
	}
	if !strings.Contains(out, "[out_mongodb:mongodb.0]") || strings.Contains(out, "[out_mongodb:audit]") {
		t.Errorf("the plugin's lines should carry mongodb.0, the Alias not reaching it:\n%s", out)
	}
	for _, k := range []string{"192.0.2.1", "ca.pem"} {
		if strings.Contains(out, k) {
			t.Errorf("%s appears in the output: a key Fluent Bit keeps reached someone:\n%s", k, out)
		}
	}
	fb, dir, conf := fluentBitConf(t, "", "", `[OUTPUT]
    Name  mongodb
    Match *
    tls   on
    uri   `+e.srv.URI+`
`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fb, "-c", conf)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "mongodb.0 does not support TLS") {
		t.Errorf("tls on: fluent-bit exited with %v, want a refusal saying the plugin does not support TLS:\n%s", err, b)
	}
}
