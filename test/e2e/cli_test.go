package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog/cli"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// runMongolog runs the mongolog command in-process with args, stdin (nil:
// empty) and the environment vars, and returns what it wrote and its exit
// code.
func runMongolog(t *testing.T, stdin string, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.Run(context.Background(), args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return vars[k] }})
	return out.String(), errOut.String(), code
}

// buildMongolog builds the mongolog command from the tree into t's temp dir
// and returns its path.
func buildMongolog(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mongolog")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mongolog")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building mongolog: %v\n%s", err, out)
	}
	return bin
}

// target are the flags that point mongolog at collection coll of e's
// database.
func (e *env) target(coll string) []string {
	return []string{"--uri", e.srv.URI, "--database", e.dbName, "--collection", coll}
}

// storeApps writes n records (i, app a or b by parity, level, cost) of a
// minute ago through the plugin into collection logs, bucketed by app.
func (e *env) storeApps(t *testing.T, n int) time.Time {
	t.Helper()
	in, _, log := monitored(t, e, "bucket_key", "app")
	at := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute) // 20 ms into one window
	var recs [][]byte
	for i := range n {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"i", i}, kv{"app", []string{"a", "b"}[i%2]},
			kv{"level", []string{"info", "error"}[i/2%2]}, kv{"cost", i * 10}))
	}
	mustDone(t, in.Flush("app.log", join(recs)), log)
	in.Exit()
	return at
}

// The binary maps what the commands return to the process's exit status:
// --help lists the codes; 0, 1, 2 and 3 each come out of the process.
func TestCLIBinary(t *testing.T) {
	e := newDBEnv(t)
	e.storeApps(t, 4)
	bin := buildMongolog(t)
	bad := writeFile(t, "bad.conf", []byte("[OUTPUT]\n    Name mongodb\n    Match *\n    uri mongodb://db:27017\n    bucket_keys app\n"))
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout, or for an error in stderr
	}{
		{[]string{"--help"}, 0, "Exit status:\n  0    done"},
		{append(append([]string{"query"}, e.target("logs")...), "--bucket_key", "app", "app=a"), 0, `"app":"a"`},
		{[]string{"check", "-c", bad}, 1, "did you mean bucket_key?"},
		{[]string{"query", "--raw"}, 2, "mongolog: --raw is gone: use --format raw"},
		{[]string{"query", "--uri", "mongodb://127.0.0.1:1/", "--connect_timeout", "1s"}, 3, "mongolog: cannot reach MongoDB"},
	} {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, c.args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("running mongolog %v: %v", c.args, err)
		}
		text := out.String()
		if c.code >= 2 {
			text = errOut.String()
		}
		if code != c.code || !strings.Contains(text, c.out) {
			t.Errorf("mongolog %v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.out, out.String(), errOut.String())
		}
	}
}

// query prints JSON lines by default, a table or raw lines with --format,
// honours conditions, the time range and --limit, reads where a Fluent Bit
// configuration says (its ${VAR} from the environment given), and names a
// field no record has (exit 2).
func TestCLIQuery(t *testing.T) {
	e := newDBEnv(t)
	at := e.storeApps(t, 20)
	args := append(e.target("logs"), "--bucket_key", "app")
	query := func(extra ...string) (string, string, int) {
		t.Helper()
		return runMongolog(t, "", nil, append(append([]string{"query"}, args...), extra...)...)
	}
	ints := func(out string) string {
		var is []string
		for _, m := range regexp.MustCompile(`"i":\s*(\d+)`).FindAllStringSubmatch(out, -1) {
			is = append(is, m[1])
		}
		return strings.Join(is, ",")
	}
	out, errOut, code := query("app=a", "level=error")
	if code != 0 || ints(out) != "2,6,10,14,18" || strings.Count(out, "\n") != 5 || errOut != "" {
		t.Errorf("query app=a level=error: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var doc bson.M
		if err := bson.UnmarshalExtJSON([]byte(line), false, &doc); err != nil {
			t.Errorf("not a JSON line: %q: %v", line, err)
		}
	}
	if out, _, code := query("cost>=150", "--limit", "3"); code != 0 || ints(out) != "15,16,17" {
		t.Errorf("query cost>=150 --limit 3: exit %d\n%s", code, out)
	}
	if out, _, code := query("--from", at.Add(18*time.Millisecond).Format(time.RFC3339Nano)); code != 0 || ints(out) != "18,19" {
		t.Errorf("query --from the 19th record: exit %d\n%s", code, out)
	}
	out, _, code = query("--format", "table", "app=b", "cost<40")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !regexp.MustCompile(`^ts +i +app +level +cost$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^\S+Z +1 +b +info +10$`).MatchString(lines[1]) || !regexp.MustCompile(`^\S+Z +3 +b +error +30$`).MatchString(lines[2]) {
		t.Errorf("query --format table app=b cost<40: exit %d\n%s", code, out)
	}
	out, errOut, code = query("levle=error")
	if code != 2 || out != "" || !strings.Contains(errOut, "none of the records of the range has levle") || !strings.Contains(errOut, "level") {
		t.Errorf("query levle=error: exit %d, stdout %q, stderr %q; want exit 2 naming the field", code, out, errOut)
	}
	if out, errOut, code := query("app=c"); code != 0 || out != "" || errOut != "" {
		t.Errorf("query app=c (no such record, a known field): exit %d, stdout %q, stderr %q; want exit 0 and nothing", code, out, errOut)
	}
	for _, gone := range []string{"--raw", "--table"} {
		if out, errOut, code := query(gone); code != 2 || out != "" || !strings.Contains(errOut, gone+" is gone: use --format "+gone[2:]) {
			t.Errorf("query %s: exit %d, stdout %q, stderr %q; want exit 2 pointing to --format", gone, code, out, errOut)
		}
	}
	file := writeFile(t, "fluent-bit.conf", fmt.Appendf(nil, "[OUTPUT]\n    Name mongodb\n    Match *\n    uri ${URI}\n    database %s\n    collection logs\n    bucket_key app\n", e.dbName))
	out, errOut, code = runMongolog(t, "", map[string]string{"URI": e.srv.URI}, "query", "-c", file, "app=a", "cost<30")
	if code != 0 || ints(out) != "0,2" {
		t.Errorf("query -c FILE app=a cost<30: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

// query --format raw prints the raw line where it was kept (a line the
// parser could not parse) and the JSON line where it was not, saying so
// once on stderr; with every line kept it says nothing.
func TestQueryRawWithoutTheLine(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"parser", "json", "bucket_key", "app"}
	in, _, log := monitored(t, e, props...)
	at := time.Now().UTC().Add(-time.Minute)
	mustDone(t, in.Flush("app.log", join([][]byte{
		record(t, at, kv{"app", "a"}, kv{"log", `{"n":1,"msg":"parsed one"}`}),
		record(t, at.Add(time.Millisecond), kv{"app", "a"}, kv{"log", "not json at all"}),
		record(t, at.Add(2*time.Millisecond), kv{"app", "a"}, kv{"log", `{"n":2,"msg":"parsed two"}`}),
		record(t, at.Add(3*time.Millisecond), kv{"app", "b"}, kv{"log", "kept whole too"}),
	})), log)
	in.Exit()
	args := append([]string{"query", "--format", "raw"}, append(e.target("logs"), "--bucket_key", "app", "--parse_key", "log")...)
	out, errOut, code := runMongolog(t, "", nil, append(args, "app=a")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], `"parsed one"`) || !strings.HasPrefix(lines[0], "{") ||
		lines[1] != "not json at all" || !strings.Contains(lines[2], `"parsed two"`) {
		t.Fatalf("query --format raw: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if n := strings.Count(errOut, "--format raw:"); n != 1 || !strings.Contains(errOut, "no text field log") || !strings.Contains(errOut, "JSON lines") {
		t.Errorf("query --format raw said %d times on stderr that records hold no raw line, want once:\n%s", n, errOut)
	}
	out, errOut, code = runMongolog(t, "", nil, append(args, "app=b")...)
	if code != 0 || strings.TrimSpace(out) != "kept whole too" || errOut != "" {
		t.Errorf("query --format raw of kept lines: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

// verify exits 0 on sound buckets and 1 on a bucket whose count is wrong,
// printing the problem with the bucket and the summary either way.
func TestCLIVerify(t *testing.T) {
	e := newDBEnv(t)
	e.storeApps(t, 20)
	args := append(append([]string{"verify"}, e.target("logs")...), "--bucket_key", "app", "--unique", "i")
	out, errOut, code := runMongolog(t, "", nil, args...)
	if code != 0 || out != "1 collections, 2 documents, 20 records: 0 problems\n" || errOut != "" {
		t.Fatalf("verify of sound buckets: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := e.all("logs")[0].Lookup("_id")
	if _, err := e.db.Collection("logs").UpdateOne(ctx, bson.D{{Key: "_id", Value: bad}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runMongolog(t, "", nil, args...)
	if code != 1 || !strings.Contains(out, "logs "+bad.StringValue()+": count 11, 10 entries") ||
		!strings.HasSuffix(out, "1 collections, 2 documents, 20 records: 1 problems\n") || errOut != "" {
		t.Errorf("verify of a bucket with a wrong count: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if out, errOut, code := runMongolog(t, "", nil, append(args, "--from", "2024-13-01")...); code != 2 || out != "" || !strings.Contains(errOut, "--from:") {
		t.Errorf("verify --from 2024-13-01: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// verify given the target as flags alone (no -c) checks the buckets'
// stats and counts against --stats and --count_by: sound buckets pass,
// and a bucket whose stats and counts do not match its entries is named.
func TestCLIVerifySummaries(t *testing.T) {
	e := newDBEnv(t)
	in, _, log := monitored(t, e, "bucket_key", "app", "stats", "cost", "count_by", "level")
	at := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	var recs [][]byte
	for i := range 20 {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"app", []string{"a", "b"}[i%2]},
			kv{"level", []string{"info", "error"}[i/2%2]}, kv{"cost", i * 10}))
	}
	mustDone(t, in.Flush("app.log", join(recs)), log)
	in.Exit()
	args := append(append([]string{"verify"}, e.target("logs")...), "--bucket_key", "app", "--stats", "cost", "--count_by", "level")
	out, errOut, code := runMongolog(t, "", nil, args...)
	if code != 0 || out != "1 collections, 2 documents, 20 records: 0 problems\n" || errOut != "" {
		t.Fatalf("verify --stats cost --count_by level of sound buckets: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := e.all("logs")[0].Lookup("_id")
	if _, err := e.db.Collection("logs").UpdateOne(ctx, bson.D{{Key: "_id", Value: bad}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "stats.cost.sum", Value: 1}, {Key: "counts.level.info", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runMongolog(t, "", nil, args...)
	if code != 1 || !strings.Contains(out, "logs "+bad.StringValue()+": stats.cost is") || !strings.Contains(out, "logs "+bad.StringValue()+": counts.level.info is") ||
		!strings.HasSuffix(out, "20 records: 2 problems\n") || errOut != "" {
		t.Errorf("verify --stats cost --count_by level of a bucket whose stats and counts are off: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

// stats prints the table and the chart, or the table only with --no-chart;
// a condition on a field that is not a bucket_key field is exit 2 before
// anything is read.
func TestCLIStats(t *testing.T) {
	e := newDBEnv(t)
	in, _, log := monitored(t, e, "bucket_key", "app")
	at := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	var recs [][]byte
	for i := range 20 { // two windows, 10 records of a and b each
		recs = append(recs, record(t, at.Add(time.Duration(i/10)*time.Minute+time.Duration(i)*time.Millisecond), kv{"app", []string{"a", "b"}[i%2]}))
	}
	mustDone(t, in.Flush("app.log", join(recs)), log)
	in.Exit()
	args := append(append([]string{"stats"}, e.target("logs")...), "--bucket_key", "app")
	out, errOut, code := runMongolog(t, "", nil, args...)
	if code != 0 || len(regexp.MustCompile(`(?m)^\S+Z +2 +10 `).FindAllString(out, -1)) != 2 || !strings.Contains(out, "records per 1m,") || errOut != "" {
		t.Errorf("stats: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	out, _, code = runMongolog(t, "", nil, append(args, "--no-chart", "app=a")...)
	if code != 0 || len(regexp.MustCompile(`(?m)^\S+Z +1 +5 `).FindAllString(out, -1)) != 2 || strings.Contains(out, "records per") {
		t.Errorf("stats --no-chart app=a: exit %d\n%s", code, out)
	}
	out, errOut, code = runMongolog(t, "", nil, append(args, "level=error")...)
	if code != 2 || out != "" || !strings.Contains(errOut, "level is not a bucket_key field (app)") {
		t.Errorf("stats level=error: exit %d, stdout %q, stderr %q; want exit 2 and the refusal only", code, out, errOut)
	}
}

// prune --dry-run shows what would go and deletes nothing; prune deletes
// it and says how much.
func TestCLIPrune(t *testing.T) {
	e := newDBEnv(t)
	e.storeApps(t, 20)
	args := append(append([]string{"prune", "--older-than", "1s"}, e.target("logs")...), "--bucket_key", "app", "app=a")
	out, errOut, code := runMongolog(t, "", nil, append(args, "--dry-run")...)
	if code != 0 || !strings.HasSuffix(out, "would delete 1 documents holding 10 records\n") || !strings.Contains(out, "a") || errOut != "" {
		t.Fatalf("prune --dry-run app=a: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if n := len(e.all("logs")); n != 2 {
		t.Fatalf("the dry run left %d buckets, want 2", n)
	}
	out, errOut, code = runMongolog(t, "", nil, args...)
	if code != 0 || !strings.HasSuffix(out, "deleted 1 documents holding 10 records\n") || errOut != "" {
		t.Fatalf("prune app=a: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	left := e.all("logs")
	if len(left) != 1 || left[0].Lookup("key", "app").StringValue() != "b" {
		t.Errorf("after prune app=a: %d buckets left, want the one of app b", len(left))
	}
}

// import stores files and standard input, with the keys of the flags or of
// a Fluent Bit output (its ${VAR} from the environment given); run again
// it stores nothing twice and says what was there.
func TestCLIImport(t *testing.T) {
	e := newDBEnv(t)
	logFile := writeFile(t, "app.log", []byte("one\ntwo\nthree\n"))
	args := append(append([]string{"import"}, e.target("imported")...), "--write_batch", "20", "--chunk-lines", "2")
	counts := regexp.MustCompile(`^imported (\d+) records from (\d+) files in (\d+) chunks \(0 retries\) in \S+: (\d+) stored, (\d+) already there, 0 parked\n$`)
	for i, c := range []struct {
		paths []string
		want  string // records, files, chunks, stored, already there
	}{
		{[]string{logFile, "-"}, "4 2 3 4 0"},
		{[]string{logFile}, "3 1 2 0 3"}, // the file's lines are there; stdin's are stamped with the time read
	} {
		out, errOut, code := runMongolog(t, "four\n", nil, append(args, c.paths...)...)
		m := counts.FindStringSubmatch(out)
		if code != 0 || m == nil || strings.Join(m[1:], " ") != c.want {
			t.Fatalf("import run %d of %v: exit %d\n%s\nstderr: %s\nwant records, files, chunks, stored, there: %s", i+1, c.paths, code, out, errOut, c.want)
		}
	}
	var lines []string
	for _, d := range e.all("imported") {
		for _, v := range mustValues(t, d.Lookup("logs")) {
			lines = append(lines, v.Document().Lookup("log").StringValue())
		}
	}
	slices.Sort(lines)
	if strings.Join(lines, ",") != "four,one,three,two" {
		t.Errorf("stored lines %q, want one, two, three, four once each", lines)
	}
	file := writeFile(t, "fluent-bit.conf", fmt.Appendf(nil, "[OUTPUT]\n    Name mongodb\n    Match app.*\n    uri ${URI}\n    database %s\n    collection viaconf\n    write_batch 20\n", e.dbName))
	out, errOut, code := runMongolog(t, "", map[string]string{"URI": e.srv.URI}, "import", "-c", file, logFile)
	if code != 0 || !strings.Contains(out, "imported 3 records from 1 files") || !strings.Contains(errOut, "tag app.import") {
		t.Errorf("import -c FILE: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if docs := e.all("viaconf"); len(docs) != 1 || docs[0].Lookup("count").AsInt64() != 3 {
		t.Errorf("import -c FILE stored %d buckets, want 1 of 3 records", len(docs))
	}
	if out, errOut, code := runMongolog(t, "", nil, append(args, filepath.Join(t.TempDir(), "none.log"))...); code != 2 || out != "" || !strings.Contains(errOut, "no such file") {
		t.Errorf("import of a missing file: exit %d, stdout %q, stderr %q; want exit 2", code, out, errOut)
	}
}

// started runs mongolog in-process in the background, writing to buffers
// safe to read meanwhile; wait returns its exit code.
func started(ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr *harness.Buffer, wait func() int) {
	stdout, stderr = &harness.Buffer{}, &harness.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, args, cli.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: func(string) string { return "" }})
	}()
	return stdout, stderr, func() int { return <-done }
}

// query --follow prints what is stored, then what lands, and ends with
// exit 0 at Ctrl-C.
func TestCLIQueryFollow(t *testing.T) {
	e := newDBEnv(t)
	e.storeApps(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut, wait := started(ctx, nil, append(append([]string{"query", "-f", "--lag", "1m"}, e.target("logs")...), "--bucket_key", "app", "app=a")...)
	lines := func() int { return strings.Count(out.String(), "\n") }
	waitFor(t, "the 2 records of app a stored", func() bool { return lines() >= 2 })
	in, _, log := monitored(t, e, "bucket_key", "app")
	mustDone(t, in.Flush("app.log", join([][]byte{record(t, time.Now().UTC(), kv{"i", 100}, kv{"app", "a"}),
		record(t, time.Now().UTC(), kv{"i", 101}, kv{"app", "b"})})), log)
	in.Exit()
	waitFor(t, "the new record of app a", func() bool { return strings.Contains(out.String(), `"i":100`) })
	cancel()
	if code := wait(); code != 0 || lines() != 3 || strings.Contains(out.String(), `"i":101`) {
		t.Errorf("query -f app=a stopped: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

// An import stopped by Ctrl-C stops between chunks, says what it stored
// and how to go on, and exits 130.
func TestCLIImportInterrupted(t *testing.T) {
	e := newDBEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, w := io.Pipe()
	defer w.Close()
	out, errOut, wait := started(ctx, r, append(append([]string{"import"}, e.target("imported")...), "--write_batch", "20", "--chunk-lines", "1", "-")...)
	if _, err := io.WriteString(w, "one\ntwo\n"); err != nil {
		t.Fatal(err)
	}
	stored := func() int {
		n := 0
		for _, d := range e.all("imported") {
			n += int(d.Lookup("count").AsInt64())
		}
		return n
	}
	waitFor(t, "the first line stored", func() bool { return stored() >= 1 })
	cancel()
	go func() { _, _ = io.WriteString(w, "three\n") }() // wakes the reader: the next chunk sees the end
	code := wait()
	if code != 130 || !strings.Contains(errOut.String(), "mongolog: interrupted: run the same import again to go on") ||
		!regexp.MustCompile(`^imported [12] records from 0 files`).MatchString(out.String()) || stored() > 2 {
		t.Errorf("import stopped: exit %d, %d stored\n%s\nstderr: %s", code, stored(), out, errOut)
	}
}
