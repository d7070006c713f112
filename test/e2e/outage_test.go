package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// The server stops while chunks flow: the first flush that finds it gone
// logs one short line, its cause first (not the driver's topology dump),
// and the flushes after it add no line of their own; once the server is
// back one line says so, with how long it was gone and how many chunks
// went back to Fluent Bit meanwhile.
func TestOutageSaidClearly(t *testing.T) {
	e := newEnv(t)
	sw := switched(t, e)
	e.init("o", e.props("uri", viaProxy(e.srv.URI, sw.Addr()), "connect_timeout", "1s", "flush_timeout", "2s", "instance_name", "o"))
	chunk := fixture("chunk-dummy-3.msgpack")
	e.mustFlush("o", "app.log", chunk)

	if err := sw.Down(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if rc := e.flush("o", "app.log", chunk); rc != harness.FLBRetry {
			t.Fatalf("flush %d with the server down: rc %d, want FLB_RETRY\n%s", i, rc, e.host.Stderr())
		}
	}
	line := regexp.MustCompile(`\[ warn\] \[out_mongodb:o\] cannot reach MongoDB at ` + regexp.QuoteMeta(sw.Addr()) + `: [^\n]*`)
	got := line.FindAllString(e.host.Stderr(), -1)
	if len(got) != 1 {
		t.Fatalf("%d lines saying MongoDB cannot be reached, want 1 for two failed flushes:\n%s", len(got), e.host.Stderr())
	}
	want := "cannot reach MongoDB at " + sw.Addr() + ": connection refused; retrying (chunk kept by Fluent Bit)"
	if !strings.HasSuffix(got[0], want) {
		t.Errorf("got %q\nwant it to end %q", got[0], want)
	}
	for _, l := range strings.Split(e.host.Stderr(), "\n") {
		if strings.Contains(l, got[0]) && len(l) > 200 {
			t.Errorf("the line is %d characters long, want at most 200: %q", len(l), l)
		}
	}
	if strings.Contains(e.host.Stderr(), "current topology") {
		t.Errorf("the driver's topology dump is logged at warn:\n%s", e.host.Stderr())
	}

	if err := sw.Up(); err != nil {
		t.Fatal(err)
	}
	retries := 2
	for ; ; retries++ {
		rc := e.flush("o", "app.log", chunk)
		if rc == harness.FLBOK {
			break
		}
		if rc != harness.FLBRetry || retries == 12 {
			t.Fatalf("flush after the server came back: rc %d\n%s", rc, e.host.Stderr())
		}
	}
	back := regexp.MustCompile(`\[ info\] \[out_mongodb:o\] MongoDB at ` + regexp.QuoteMeta(sw.Addr()) + ` is back after \d+s \((\d+) chunks retried\)`)
	m := back.FindAllStringSubmatch(e.host.Stderr(), -1)
	if len(m) != 1 {
		t.Fatalf("%d lines saying MongoDB is back, want 1:\n%s", len(m), e.host.Stderr())
	}
	if m[0][1] != strconv.Itoa(retries) {
		t.Errorf("back line %q counts %s chunks retried, want %d", m[0][0], m[0][1], retries)
	}
	e.exit("o")
}
