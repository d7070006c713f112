package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flushRecord mirrors the JSON the probe plugin writes for every flush.
type flushRecord struct {
	Tag    string `json:"tag"`
	ID     string `json:"id"`
	Label  string `json:"label"`
	Host   string `json:"host"`
	Shared string `json:"shared"`
	Same   bool   `json:"same"`
	Peak   int32  `json:"peak"`
}

// readFlush returns what the probe recorded for a flush of data with tag.
func readFlush(t *testing.T, dir, tag string, data []byte) flushRecord {
	t.Helper()
	sum := sha256.Sum256(data)
	base := filepath.Join(dir, tag+"-"+hex.EncodeToString(sum[:8]))
	got, err := os.ReadFile(base + ".bin")
	if err != nil {
		t.Fatalf("probe saw no flush of %q with tag %s: %v", data, tag, err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("probe received %q, want %q", got, data)
	}
	meta, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var rec flushRecord
	if err := json.Unmarshal(meta, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestProbe builds fbhost and the probe plugin once and runs the subtests
// against them.
func TestProbe(t *testing.T) {
	tmp := t.TempDir()
	bin, err := Build(".", tmp)
	if err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(tmp, "probe.so")
	if out, err := exec.Command("go", "build", "-buildmode=c-shared", "-o", so, "./testdata/probe").CombinedOutput(); err != nil {
		t.Fatalf("building probe: %v\n%s", err, out)
	}
	t.Run("lifecycle", func(t *testing.T) { testLifecycle(t, bin, so) })
	t.Run("crash", func(t *testing.T) { testCrash(t, bin, so) })
	t.Run("timeout", func(t *testing.T) { testTimeout(t, bin, so) })
}

// startProbe starts fbhost, registers the probe and inits instance "p"
// writing to a fresh directory, which it returns.
func startProbe(t *testing.T, bin, so string, props map[string]string) (*Host, string) {
	t.Helper()
	h, err := Start(bin, so)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	props["dir"] = out
	if _, _, err := h.Register(); err != nil {
		t.Fatal(err)
	}
	if rc, err := h.Init("p", props); err != nil || rc != FLBOK {
		t.Fatalf("Init = %d, %v\n%s", rc, err, h.Stderr())
	}
	return h, out
}

// testCrash checks that a panic in the plugin surfaces as errors, not a hang.
func testCrash(t *testing.T, bin, so string) {
	h, out := startProbe(t, bin, so, map[string]string{"id": "p"})
	file := writeFile(t, out, "data", []byte("x"))
	if _, err := h.Flush("p", "panic", file); err == nil {
		t.Error("flush that panics succeeded")
	}
	err := h.Close()
	if err == nil || !strings.Contains(err.Error(), "asked to panic") {
		t.Errorf("Close after a panic = %v, want an error with the panic", err)
	}
}

// testTimeout checks that a flush slower than Timeout fails and kills fbhost.
func testTimeout(t *testing.T, bin, so string) {
	h, out := startProbe(t, bin, so, map[string]string{"id": "p", "sleep_ms": "5000"})
	h.Timeout = 200 * time.Millisecond
	file := writeFile(t, out, "data", []byte("x"))
	if _, err := h.Flush("p", "slow", file); err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Errorf("slow flush = %v, want a timeout", err)
	}
	if _, err := h.Exit("p"); err == nil {
		t.Error("exit after the kill succeeded")
	}
	if err := h.Close(); err == nil {
		t.Error("Close after the kill reported no error")
	}
}

func testLifecycle(t *testing.T, bin, so string) {
	tmp := t.TempDir()
	h, err := Start(bin, so)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("fbhost log:\n%s", h.Stderr())
		}
	}()

	if _, err := h.Init("early", nil); err == nil {
		t.Error("init before register succeeded")
	}
	name, rc, err := h.Register()
	if err != nil || name != "probe" || rc != 0 {
		t.Fatalf("Register = %q, %d, %v; want probe, 0, nil", name, rc, err)
	}

	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	label := "spaces = and % and\ttab"
	for _, in := range []struct {
		id    string
		props map[string]string
	}{
		{"a", map[string]string{"dir": out, "id": "a", "label": label, "host": "reserved"}},
		{"b", map[string]string{"dir": out, "id": "b", "rc": "2", "sleep_ms": "300"}},
	} {
		if rc, err := h.Init(in.id, in.props); err != nil || rc != FLBOK {
			t.Fatalf("Init(%s) = %d, %v; want FLBOK", in.id, rc, err)
		}
	}

	// Binary data, NUL bytes included, must arrive unchanged.
	dataA := []byte("\x92\xd7\x00\x00\x00\x00\x01hello\x00world\n")
	fileA := writeFile(t, tmp, "a.bin", dataA)
	if rc, err := h.Flush("a", "tag.a", fileA); err != nil || rc != FLBOK {
		t.Fatalf("Flush(a) = %d, %v; want FLBOK", rc, err)
	}
	rec := readFlush(t, out, "tag.a", dataA)
	want := flushRecord{Tag: "tag.a", ID: "a", Label: label, Shared: "b", Same: true, Peak: 1}
	// Shared: the key read through the shared plugin pointer at flush
	// time is the LAST instance's, and both Inits got the same pointer.
	if rec != want {
		t.Errorf("flush of a recorded %+v, want %+v", rec, want)
	}

	if rc, err := h.Flush("b", "tag.b", fileA); err != nil || rc != FLBRetry {
		t.Errorf("Flush(b) = %d, %v; want FLBRetry", rc, err)
	}
	if rec := readFlush(t, out, "tag.b", dataA); rec.ID != "b" {
		t.Errorf("flush of b recorded id %q", rec.ID)
	}

	var files [][]byte
	var paths []string
	for _, s := range []string{"one", "two", "three"} {
		files = append(files, []byte(s))
		paths = append(paths, writeFile(t, tmp, s, []byte(s)))
	}
	rcs, err := h.FlushConcurrent("b", "conc", paths)
	if err != nil || len(rcs) != 3 || rcs[0] != FLBRetry || rcs[1] != FLBRetry || rcs[2] != FLBRetry {
		t.Fatalf("FlushConcurrent = %v, %v; want three FLBRetry", rcs, err)
	}
	var peak int32
	for _, data := range files {
		peak = max(peak, readFlush(t, out, "conc", data).Peak)
	}
	if peak < 2 {
		t.Errorf("concurrent flushes never overlapped (peak %d)", peak)
	}

	if _, err := h.Flush("nope", "t", fileA); err == nil {
		t.Error("flush of an unknown instance succeeded")
	}
	if _, err := h.Flush("a", "t", filepath.Join(tmp, "missing")); err == nil {
		t.Error("flush of a missing file succeeded")
	}
	if _, err := h.Init("late", map[string]string{"dir": out}); err == nil {
		t.Error("init after the first flush succeeded")
	}
	if _, err := h.Unregister(); err == nil {
		t.Error("unregister with live instances succeeded")
	}

	for _, id := range []string{"a", "b"} {
		if rc, err := h.Exit(id); err != nil || rc != FLBOK {
			t.Errorf("Exit(%s) = %d, %v", id, rc, err)
		}
		if !exists(filepath.Join(out, "exit-"+id)) {
			t.Errorf("FLBPluginExitCtx did not run for %s", id)
		}
	}
	if _, err := h.Exit("a"); err == nil {
		t.Error("second exit of a succeeded")
	}
	if rc, err := h.Unregister(); err != nil || rc != 0 {
		t.Errorf("Unregister = %d, %v", rc, err)
	}
	if !exists(filepath.Join(out, "unregister")) {
		t.Error("FLBPluginUnregister did not run")
	}
	// The probe's stdout and fbhost's notes land in the log, not in results.
	for _, s := range []string{"probe: init a", "probe: init b", "keeps 'host'"} {
		if log := h.Stderr(); !strings.Contains(log, s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

func TestEscape(t *testing.T) {
	if got, want := escape("a b=%\n\x7fé"), "a%20b%3D%25%0A%7Fé"; got != want {
		t.Errorf("escape = %q, want %q", got, want)
	}
}
