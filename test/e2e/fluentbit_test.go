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
	fb, err := exec.LookPath("fluent-bit")
	if err != nil {
		t.Skip("no fluent-bit on PATH; the host harness tests cover the same calls")
	}
	dir := t.TempDir()
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
	conf := write("fluent-bit.conf", `[SERVICE]
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
    Exit_On_Eof    On

`+outputs)
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
	if !strings.Contains(out, "MongoDB is not reachable yet") || !strings.Contains(out, "will be retried") {
		t.Errorf("no sign of the outage in the log:\n%s", out)
	}
	entries := checkBuckets(t, e.all("logs"), defaultLimits)
	checkSeqs(t, entries, 5000)
	if t.Failed() {
		t.Logf("fluent-bit output:\n%s", out)
	}
}
