package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// entriesOf returns the entries of every bucket of coll, each as its bytes,
// sorted.
func entriesOf(t *testing.T, e *env, coll string) []string {
	t.Helper()
	var out []string
	for _, d := range e.all(coll) {
		for _, v := range mustValues(t, d.Lookup("logs")) {
			out = append(out, string(v.Document()))
		}
	}
	slices.Sort(out)
	return out
}

// import of the access log stores exactly what the plugin stores for the
// same lines from Fluent Bit (the raw chunk tail made of them).
func TestImportStoresWhatThePluginStores(t *testing.T) {
	e := newDBEnv(t)
	keys := []string{"parser", "apache_combined", "time_from_log", "on", "bucket_key", "method"}
	in, _, log := monitored(t, e, append(keys, "collection", "plugin")...)
	mustDone(t, in.Flush("access", readFixture(t, "chunk-raw-access-5000.msgpack")), log)
	in.Exit()
	imp, _, implog := monitored(t, e, append(keys, "collection", "imported")...)
	res, err := mongolog.Import(context.Background(), imp, mongolog.ImportOptions{Paths: []string{filepath.Join("..", "testdata", "access-5*.log")}, Tag: "access"})
	imp.Exit()
	if err != nil || res.Records != 5000 || res.Files != 1 {
		t.Fatalf("import: %+v, %v\n%s", res, err, implog)
	}
	want, got := entriesOf(t, e, "plugin"), entriesOf(t, e, "imported")
	if len(want) != 5000 || !slices.Equal(got, want) {
		t.Fatalf("imported %d entries, the plugin stored %d; equal: %v", len(got), len(want), slices.Equal(got, want))
	}
}

// An import killed half-way (SIGKILL, mid-chunk) and run again stores every
// line exactly once.
func TestImportKilledAndRunAgain(t *testing.T) {
	e := newDBEnv(t)
	if e.srv.URI == "" {
		t.Fatal("no server URI")
	}
	bin := buildMongolog(t) // a process, to be killed
	// A copy of the log, so its modification time stays the same between
	// the two runs whatever happens to the fixture.
	all, err := os.ReadFile(filepath.Join("..", "testdata", "access-5000.log"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000 // lines imported: enough for 20 chunks
	src := []byte(strings.Join(strings.SplitAfter(string(all), "\n")[:n], ""))
	logFile := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(logFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "--uri", e.srv.URI, "--database", e.dbName, "--collection", "imported", "--parser", "apache_combined",
		"--bucket_key", "method", "--write_batch", "20", "--chunk-lines", "50", logFile}
	stored := func() int {
		n := 0
		for _, d := range e.all("imported") {
			n += int(d.Lookup("count").AsInt64())
		}
		return n
	}
	first := exec.Command(bin, args...)
	var out strings.Builder
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first run to store some records", func() bool { return stored() >= n/5 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	half := stored()
	if half >= n {
		t.Fatalf("the first run finished before the kill (%d records)", half)
	}
	// The second run says what it stored and what the first had: all of
	// it, once; a third finds everything there.
	counts := regexp.MustCompile(`imported (\d+) records .*: (\d+) stored, (\d+) already there, 0 parked`)
	for run, atLeast := range []int{half, n} {
		b, err := exec.Command(bin, args...).CombinedOutput()
		m := counts.FindStringSubmatch(string(b))
		if err != nil || m == nil {
			t.Fatalf("run %d after the kill: %v\n%s", run+1, err, b)
		}
		imported, stored, there := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
		if imported != n || stored+there != n || there < atLeast {
			t.Errorf("run %d after the kill at %d: %q; want %d records, stored and already there adding up, at least %d there", run+1, half, m[0], n, atLeast)
		}
	}
	// What one uninterrupted run stores, from the same file.
	ref, _, reflog := monitored(t, e, "collection", "reference", "parser", "apache_combined", "bucket_key", "method")
	if _, err := mongolog.Import(context.Background(), ref, mongolog.ImportOptions{Paths: []string{logFile}, ChunkLines: 50}); err != nil {
		t.Fatalf("%v\n%s", err, reflog)
	}
	ref.Exit()
	got, want := entriesOf(t, e, "imported"), entriesOf(t, e, "reference")
	if len(want) != n || !slices.Equal(got, want) {
		t.Errorf("%d records stored after a kill at %d and a second run; one run stores %d (equal: %v)", len(got), half, len(want), slices.Equal(got, want))
	}
	r := reader(t, e, "collection", "imported", "bucket_key", "method")
	var ps []mongolog.Problem
	if _, err := r.Verify(context.Background(), mongolog.VerifyOptions{}, func(p mongolog.Problem) { ps = append(ps, p) }); err != nil || len(ps) > 0 {
		t.Errorf("verify after the second run: %v %v", err, ps)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
