// Package arm64 runs the linux/arm64 build of the plugin and of mongolog
// under user-mode emulation (qemu-aarch64) against the test server, which
// runs natively: the arm64 .so loads in an arm64 host harness, decodes a
// chunk, writes it (a resend after the server was gone included), and the
// arm64 mongolog reads it back, each record once.
// `make arm64-test` builds what it needs and runs it; without that it skips.
package arm64

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

// The tools, from the environment make arm64-test sets, with Debian's
// names as defaults.
func setting(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// records is how many records the chunk holds.
const records = 200

func TestArm64StoreAndReadBack(t *testing.T) {
	so, mongolog := os.Getenv("ARM64_SO"), os.Getenv("ARM64_MONGOLOG")
	if so == "" || mongolog == "" {
		t.Skip("ARM64_SO and ARM64_MONGOLOG are not set: make arm64-test builds the arm64 plugin and mongolog and runs this test")
	}
	cc := setting("ARM64_CC", "aarch64-linux-gnu-gcc")
	qemu := setting("QEMU_AARCH64", "qemu-aarch64")
	sysroot := setting("ARM64_SYSROOT", "/usr/aarch64-linux-gnu")
	for _, tool := range []string{cc, qemu} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: gcc-aarch64-linux-gnu, qemu-user): %v", tool, err)
		}
	}
	tmp := t.TempDir()
	fbhost, err := harness.BuildWith(cc, "../harness", tmp, "fbhost-arm64")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{so, mongolog, fbhost} {
		mustBeArm64(t, f)
	}

	srv := mongotest.Start(t)
	db := srv.Database(t)
	chunk := filepath.Join(tmp, "chunk.msgpack")
	if err := os.WriteFile(chunk, makeChunk(t, time.Now().UTC()), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	h, err := harness.StartCommand([]string{qemu, "-L", sysroot, fbhost, so})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("plugin log:\n%s", h.Stderr())
		}
	}()
	if name, rc, err := h.Register(); err != nil || rc != 0 || name != "mongodb" {
		t.Fatalf("register: name %q rc %d err %v", name, rc, err)
	}
	props := map[string]string{"uri": srv.URI, "database": db, "collection": "logs", "write_batch": "20",
		"agent_id": "arm64-test", "lock_dir": filepath.Join(tmp, "locks"), "connect_timeout": "2s", "flush_timeout": "5s"}
	if rc, err := h.Init("0", props); err != nil || rc != harness.FLBOK {
		t.Fatalf("init: rc %d err %v", rc, err)
	}
	// With the server gone the chunk is given back (FLB_RETRY); Fluent
	// Bit resends it until it is taken, and each record is stored once.
	attempts := 0
	if !srv.Real {
		srv.Stop()
		rc, err := h.Flush("0", "app.arm64", chunk)
		if err != nil || rc != harness.FLBRetry {
			t.Fatalf("flush with the server stopped: rc %d err %v, want FLB_RETRY", rc, err)
		}
		attempts++
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	for {
		rc, err := h.Flush("0", "app.arm64", chunk)
		attempts++
		if err != nil {
			t.Fatal(err)
		}
		if rc == harness.FLBOK {
			break
		}
		if rc != harness.FLBRetry || attempts == 10 {
			t.Fatalf("attempt %d: rc %d", attempts, rc)
		}
	}
	if _, err := h.Exit("0"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("arm64 plugin: register, init, %d attempts of a chunk of %d records, exit in %v under emulation", attempts, records, time.Since(start).Round(time.Millisecond))

	// The start-up line says the build that ran: arm64, with its version.
	m := regexp.MustCompile(`; out_mongodb (\S+) \((go[^,]+), linux/arm64\)`).FindStringSubmatch(h.Stderr())
	if m == nil {
		t.Fatalf("no start-up line of a linux/arm64 build in the plugin's log:\n%s", h.Stderr())
	}
	version := m[1]

	out := run(t, qemu, "-L", sysroot, mongolog, "version")
	if want := "mongolog " + version + " (" + m[2] + ", linux/arm64)\n"; out != want {
		t.Errorf("arm64 mongolog version: %q, want %q (the plugin's)", out, want)
	}

	out = run(t, qemu, "-L", sysroot, mongolog, "query", "--uri", srv.URI, "--database", db, "--collection", "logs", "--format", "json")
	seen := map[float64]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Seq *float64 `json:"seq"`
			Msg string   `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Seq == nil || rec.Msg != "hello from arm64" {
			t.Fatalf("arm64 mongolog query printed %q (%v), want a record of the chunk", sc.Text(), err)
		}
		seen[*rec.Seq]++
	}
	for i := range records {
		if n := seen[float64(i)]; n != 1 {
			t.Errorf("record seq %d read back %d times, want once", i, n)
		}
	}
	if len(seen) != records {
		t.Errorf("read back %d distinct records, want %d", len(seen), records)
	}
}

// run runs a command and returns its stdout, failing the test with its
// stderr when it fails.
func run(t *testing.T, argv ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	return stdout.String()
}

// mustBeArm64 fails the test unless path is an ELF file for aarch64, so
// that an amd64 build slipped in cannot pass for the arm64 one.
func mustBeArm64(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("%s is built for %v, not aarch64", path, f.Machine)
	}
}

// makeChunk is a Fluent Bit chunk of records [[time, {}], {seq, level,
// msg}], seq numbering them from 0, a millisecond apart from ts.
func makeChunk(t *testing.T, ts time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	for i := range records {
		at := ts.Add(time.Duration(i) * time.Millisecond)
		et := []byte{0xd7, 0x00}
		et = binary.BigEndian.AppendUint32(et, uint32(at.Unix()))
		et = binary.BigEndian.AppendUint32(et, uint32(at.Nanosecond()))
		for _, err := range []error{
			enc.EncodeArrayLen(2), enc.EncodeArrayLen(2), enc.Encode(msgpack.RawMessage(et)), enc.EncodeMapLen(0),
			enc.EncodeMapLen(3),
			enc.EncodeString("seq"), enc.EncodeInt(int64(i)),
			enc.EncodeString("level"), enc.EncodeString([]string{"info", "warn", "error"}[i%3]),
			enc.EncodeString("msg"), enc.EncodeString("hello from arm64"),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return buf.Bytes()
}
