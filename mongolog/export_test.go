package mongolog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// exportRecords is how many records exportData stores: 20 in each of the
// first three hours of day, 3 minutes apart, apps a and b.
const exportRecords = 60

// exportData stores exportRecords records through the plugin and returns
// the keys of their target and the day they are on (two days ago).
func exportData(t *testing.T, db *mongo.Database) (map[string]string, time.Time) {
	t.Helper()
	k := keys(t, db, "bucket_key", "app", "count_by", "level", "stats", "i", "dead_letter_ttl", "0")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	var recs []rec
	for i := range exportRecords {
		recs = append(recs, rec{day.Add(time.Duration(i) * 3 * time.Minute), fmt.Sprintf(`{"app":"%s","level":"%s","i":%d}`,
			[]string{"a", "b"}[i%2], []string{"info", "error", "warn"}[i%3], i)})
	}
	store(t, k, 20, recs...)
	return k, day
}

// export runs Export in-process and returns what it did and reported.
func export(t *testing.T, k map[string]string, opt ExportOptions) (Exported, []string, error) {
	t.Helper()
	var lines []string
	opt.Report = func(s string) { lines = append(lines, s) }
	res, err := reader(t, k).Export(context.Background(), opt)
	return res, lines, err
}

// exported are the lines of the gzip files of dir by file, and the
// manifests.
func exported(t *testing.T, dir string) (map[string][]string, map[string]Manifest) {
	t.Helper()
	files, mans := map[string][]string{}, map[string]Manifest{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(p, ".jsonl.gz"):
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			text, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			files[filepath.Base(p)] = strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
			if len(text) == 0 {
				files[filepath.Base(p)] = nil
			}
		case filepath.Base(p) == LockFile:
		case strings.HasSuffix(p, ".manifest.json"):
			var m Manifest
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			mans[m.File] = m
		default:
			t.Errorf("%s: neither a file nor a manifest (a temporary file left?)", p)
		}
	}
	return files, mans
}

// line is one exported line, as far as the tests read it.
type line struct {
	Key    map[string]any `json:"key"`
	Record struct {
		I   int    `json:"i"`
		App string `json:"app"`
	} `json:"record"`
}

// everyOnce checks that the files hold each of the n records once, each
// with its bucket's key, and that each file has as many as its manifest.
func everyOnce(t *testing.T, files map[string][]string, mans map[string]Manifest, n int) {
	t.Helper()
	seen := map[int]int{}
	for name, lines := range files {
		m, ok := mans[name]
		if !ok || m.Records != int64(len(lines)) {
			t.Errorf("%s: %d lines, manifest %+v", name, len(lines), m)
		}
		for _, l := range lines {
			var v line
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("%s: not a JSON line: %q: %v", name, l, err)
			}
			if v.Key["app"] != v.Record.App {
				t.Errorf("%s: a line whose key is not its bucket's: %s", name, l)
			}
			seen[v.Record.I]++
		}
	}
	for i := range n {
		if seen[i] != 1 {
			t.Errorf("record %d is in the files %d times", i, seen[i])
		}
	}
	if len(seen) != n {
		t.Errorf("the files hold %d distinct records, want %d", len(seen), n)
	}
}

func sameDirs(t *testing.T, a, b string) {
	t.Helper()
	names := func(dir string) []string {
		ps, _ := filepath.Glob(filepath.Join(dir, "*"))
		for i := range ps {
			ps[i] = filepath.Base(ps[i])
		}
		return slices.DeleteFunc(ps, func(n string) bool { return n == LockFile }) // it names the run
	}
	if na, nb := names(a), names(b); !slices.Equal(na, nb) || len(na) == 0 {
		t.Fatalf("%s holds %q, %s holds %q", a, na, b, nb)
	}
	for _, n := range names(a) {
		x, _ := os.ReadFile(filepath.Join(a, n))
		y, _ := os.ReadFile(filepath.Join(b, n))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between the two runs", n)
		}
	}
}

// Two runs over the same data write byte-identical files; each line is a
// record as query prints it in json, with its bucket's key; a third run
// finds every window done.
func TestExportDeterministic(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	opt := ExportOptions{From: day, To: day.Add(4 * time.Hour), Step: time.Hour}
	var dirs []string
	for range 2 {
		opt.Dir = t.TempDir()
		res, lines, err := export(t, k, opt)
		if err != nil || res.Windows != 4 || res.Written != 3 || res.Records != exportRecords || len(lines) != 0 {
			t.Fatalf("export: %+v, %q, %v", res, lines, err)
		}
		dirs = append(dirs, opt.Dir)
	}
	sameDirs(t, dirs[0], dirs[1])
	files, mans := exported(t, dirs[0])
	everyOnce(t, files, mans, exportRecords)
	name := fmt.Sprintf("%s.logs.%s.1h.jsonl.gz", db.Name(), day.Add(time.Hour).Format("20060102T150405Z"))
	m := mans[name]
	if m.Records != 20 || m.Buckets != 20 || !m.First.Equal(day.Add(time.Hour)) || !m.Last.Equal(day.Add(time.Hour+57*time.Minute)) ||
		len(m.Stored) != 20 || m.SHA256 == "" {
		t.Errorf("the manifest of the second hour: %+v", m)
	}
	if len(files) != 3 || len(mans) != 3 {
		t.Errorf("%d files and %d manifests: want those of the three hours with records, none for the fourth", len(files), len(mans))
	}
	// The records as query prints them.
	var want bytes.Buffer
	p := &Printer{W: &want, Format: "json"}
	if err := reader(t, k).Query(context.Background(), Query{From: day.Add(time.Hour), To: day.Add(2 * time.Hour)}, p.Print); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range files[name] {
		var v struct{ Record json.RawMessage }
		_ = json.Unmarshal([]byte(l), &v)
		got = append(got, string(v.Record))
	}
	wantLines := strings.Split(strings.TrimSpace(want.String()), "\n")
	slices.Sort(got)
	slices.Sort(wantLines)
	if !slices.Equal(got, wantLines) {
		t.Errorf("the second hour's records:\n%s\nquery prints:\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	res, _, err := export(t, k, opt)
	if err != nil || res.Skipped != 3 || res.Written != 0 {
		t.Errorf("a third run into a done directory: %+v, %v", res, err)
	}
	sameDirs(t, dirs[0], opt.Dir)
	// A condition on records: only those, and --prune is refused with it.
	opt.Dir, opt.Conds = t.TempDir(), []Cond{{Field: "level", Op: "=", Value: "error"}}
	res, _, err = export(t, k, opt)
	if err != nil || res.Records != exportRecords/3 {
		t.Errorf("export level=error: %+v, %v", res, err)
	}
	opt.Prune = true
	if _, _, err := export(t, k, opt); err == nil || !strings.Contains(err.Error(), "level=error is not one") {
		t.Errorf("export --prune level=error: %v", err)
	}
}

// corrupt makes one bucket of the hour at wrong: its count one above its
// entries.
func corrupt(t *testing.T, db *mongo.Database, at time.Time) string {
	t.Helper()
	var b bson.Raw
	err := db.Collection("logs").FindOneAndUpdate(context.Background(), bson.D{{Key: model.MinTs, Value: bson.D{{Key: "$gte", Value: at}, {Key: "$lt", Value: at.Add(time.Hour)}}}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: model.Count, Value: 1}}}}).Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	return b.Lookup(model.ID).StringValue()
}

// A window with a bucket verify finds wrong is refused, naming it, and
// the others are written; --force writes it; --prune deletes the buckets
// of the windows written and verified only, never the wrong one; a bucket
// that changed since its window was written is kept; a window pruned
// whose file no longer matches is not written again.
func TestExportVerifiesAndPrunes(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	bad := corrupt(t, db, day.Add(time.Hour))
	opt := ExportOptions{From: day, To: day.Add(3 * time.Hour), Step: time.Hour, Dir: t.TempDir(), Prune: true, Rate: 100000}
	res, lines, err := export(t, k, opt)
	if err != nil || res.Written != 2 || res.Refused != 1 || res.Records != 40 || res.Deleted != 40 || len(lines) != 2 ||
		!strings.Contains(lines[0], "logs "+bad+": count 2, 1 entries") || !strings.Contains(lines[1], "refused window "+day.Add(time.Hour).Format(time.RFC3339)) ||
		!strings.Contains(lines[1], bad) {
		t.Fatalf("export --prune with a bad bucket in the second hour: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	if n := count(t, db, "logs", bson.D{}); n != 20 {
		t.Errorf("%d buckets left, want the 20 of the refused hour", n)
	}
	files, mans := exported(t, opt.Dir)
	if len(files) != 2 || len(mans) != 2 {
		t.Errorf("files %d, manifests %d: want those of the two hours written", len(files), len(mans))
	}
	opt.Force = true
	res, lines, err = export(t, k, opt)
	if err != nil || res.Written != 1 || res.Skipped != 2 || res.Records != 20 || res.Deleted != 19 {
		t.Fatalf("export --force --prune: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	if n := count(t, db, "logs", bson.D{}); n != 1 {
		t.Errorf("%d buckets left, want the bad one", n)
	}
	files, mans = exported(t, opt.Dir)
	everyOnce(t, files, mans, exportRecords)
	forced := mans[fmt.Sprintf("%s.logs.%s.1h.jsonl.gz", db.Name(), day.Add(time.Hour).Format("20060102T150405Z"))]
	if len(forced.Forced) != 1 || !strings.Contains(forced.Forced[0], bad) {
		t.Errorf("the forced window's manifest: %+v", forced.Forced)
	}
	// A file damaged after its buckets were deleted: not written again.
	name := filepath.Join(opt.Dir, fmt.Sprintf("%s.logs.%s.1h.jsonl.gz", db.Name(), day.Format("20060102T150405Z")))
	if err := os.WriteFile(name, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := export(t, k, opt); err == nil || !strings.Contains(err.Error(), "restore the file") {
		t.Errorf("a pruned window whose file is damaged: %v", err)
	}
}

// A bucket that grew after its window was written is kept by --prune.
func TestExportPruneKeepsAChangedBucket(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	opt := ExportOptions{From: day, To: day.Add(time.Hour), Step: time.Hour, Dir: t.TempDir(), Rate: 100000}
	if res, _, err := export(t, k, opt); err != nil || res.Written != 1 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	changed := corrupt(t, db, day)
	opt.Prune = true
	res, lines, err := export(t, k, opt)
	if err != nil || res.Skipped != 1 || res.Deleted != 19 || res.Kept != 1 || len(lines) != 1 || !strings.Contains(lines[0], "kept 1 documents") {
		t.Errorf("export --prune after a bucket changed: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	if n := count(t, db, "logs", bson.D{{Key: model.ID, Value: changed}}); n != 1 {
		t.Errorf("the changed bucket was deleted")
	}
}

// A window exported and pruned; a late chunk then makes a bucket of it
// again, with the same _id and count (1) and other entries: exporting the
// window again keeps that bucket (its records are in no file) and says so.
func TestExportPruneKeepsABucketMadeAgain(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	opt := ExportOptions{From: day, To: day.Add(time.Hour), Step: time.Hour, Dir: t.TempDir(), Prune: true, Rate: 100000}
	if res, lines, err := export(t, k, opt); err != nil || res.Written != 1 || res.Deleted != 20 {
		t.Fatalf("export --prune: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	store(t, k, 1, rec{day, `{"app":"a","level":"info","i":1000}`})
	if n := count(t, db, "logs", bson.D{}); n != 41 {
		t.Fatalf("%d buckets after the late chunk, want 41", n)
	}
	res, lines, err := export(t, k, opt)
	if err != nil || res.Skipped != 1 || res.Deleted != 0 || res.Kept != 1 || len(lines) != 1 || !strings.Contains(lines[0], "kept 1 documents") {
		t.Errorf("export --prune again: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	if n := count(t, db, "logs", bson.D{}); n != 41 {
		t.Errorf("%d buckets left, want 41: the late bucket was deleted", n)
	}
}

// waitLine reads r until a line holding sub; false when r ends first.
func waitLine(r io.Reader, sub string) bool {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return true
		}
	}
	return false
}

// Killed (SIGKILL) after a window's temporary file, then after a file
// renamed without its manifest, and run again, export leaves every record
// in the files once, the files those of a run never killed, and with
// --prune every bucket deleted once its window is done.
func TestExportKilledAndRunAgain(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	ref := ExportOptions{From: day, To: day.Add(4 * time.Hour), Step: time.Hour, Dir: t.TempDir()}
	if _, _, err := export(t, k, ref); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{"export", "--uri", k["uri"], "--database", db.Name(), "--collection", "logs", "--bucket_key", "app",
		"--count_by", "level", "--stats", "i", "--from", day.Format(time.RFC3339), "--to", day.Add(4 * time.Hour).Format(time.RFC3339), "--step", "1h", "--dir", dir, "--prune"}
	for _, pause := range []string{"temp:2", "file:2"} {
		cmd := exec.Command(mongologBinary(t), args...)
		cmd.Env = append(os.Environ(), "MONGOLOG_EXPORT_PAUSE="+pause)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if !waitLine(stderr, "paused at") {
			_ = cmd.Wait()
			t.Fatalf("export with %s ended without pausing", pause)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
		if pause == "temp:2" && len(tmps) != 1 {
			t.Errorf("killed after the second window's temporary file: temporary files %q", tmps)
		}
	}
	if n := count(t, db, "logs", bson.D{}); n != 20 {
		t.Errorf("after the kills: %d buckets, want the 20 of the hour not done", n)
	}
	out, errOut, code := mongolog(t, args...)
	if code != 0 || !strings.Contains(out, "4 windows to "+dir+": 1 written (20 records of 20 documents), 2 already there, 0 refused, 1 empty (no file); deleted 20 documents, 0 kept") {
		t.Fatalf("the run after the kills: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	files, mans := exported(t, dir)
	everyOnce(t, files, mans, exportRecords)
	sameDirs(t, ref.Dir, dir)
	if n := count(t, db, "logs", bson.D{}); n != 0 {
		t.Errorf("%d buckets left after every window was exported with --prune", n)
	}
}

// The command refuses, before reading anything, windows that are not on a
// step boundary, still open or not whole buckets, and a --key that is not
// a bucket_key field.
func TestExportCommandUsage(t *testing.T) {
	base := []string{"export", "--uri", "mongodb://127.0.0.1:1/", "--connect_timeout", "1s", "--bucket_key", "app", "--dir", t.TempDir()}
	now := time.Now().UTC().Truncate(time.Hour)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "2024-06-01T10:30", "--to", "2024-06-02"}, "--from 2024-06-01T10:30:00Z is not the start of a window of --step 1d (UTC): use 2024-06-01T00:00:00Z"},
		{[]string{"--from", "2024-06-01", "--to", now.Add(24 * time.Hour).Format("2006-01-02")}, "is still being written"},
		{[]string{"--from", "2024-06-01", "--to", "2024-06-02", "--step", "7h"}, "--step 7h: want a duration that divides 24h"},
		{[]string{"--from", "2024-06-01", "--to", "2024-06-02", "--step", "1h", "--bucket_window", "2h"}, "cannot be finer than the bucket window"},
		{[]string{"--from", "2024-06-01", "--to", "2024-06-02", "--key", "level=error"}, "--key: level=error: want a bucket_key field (app) = value"},
		{[]string{"--to", "2024-06-02"}, "--from and --to are required"},
	} {
		out, errOut, code := mongolog(t, append(base, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("export %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// Flat documents go to the window of their time, and --prune deletes them
// once their file is verified.
func TestExportFlat(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "mode", "flat", "dead_letter_ttl", "0")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	var recs []rec
	for i := range 10 {
		recs = append(recs, rec{day.Add(time.Duration(i) * 11 * time.Minute), fmt.Sprintf(`{"app":"a","i":%d}`, i)})
	}
	store(t, k, 5, recs...)
	opt := ExportOptions{From: day, To: day.Add(2 * time.Hour), Step: time.Hour, Dir: t.TempDir(), Prune: true, Rate: 100000}
	res, lines, err := export(t, k, opt)
	if err != nil || res.Written != 2 || res.Records != 10 || res.Deleted != 10 || len(lines) != 0 {
		t.Fatalf("export --prune of flat documents: %+v, %q, %v", res, lines, err)
	}
	files, mans := exported(t, opt.Dir)
	seen := map[int]bool{}
	for name, ls := range files {
		if mans[name].Records != int64(len(ls)) {
			t.Errorf("%s: %d lines, manifest %+v", name, len(ls), mans[name])
		}
		for _, l := range ls {
			var v line
			if err := json.Unmarshal([]byte(l), &v); err != nil || v.Key != nil || seen[v.Record.I] {
				t.Errorf("%s: line %q (%v)", name, l, err)
			}
			seen[v.Record.I] = true
		}
	}
	if len(seen) != 10 || count(t, db, "logs", bson.D{}) != 0 {
		t.Errorf("%d records exported, %d documents left", len(seen), count(t, db, "logs", bson.D{}))
	}
}

// A bucket one of whose entries changed after its window was written, its
// count unchanged (verify finds it wrong: its level counts no longer add
// up), is kept by --prune.
func TestExportPruneKeepsABucketWhoseEntryChanged(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	opt := ExportOptions{From: day, To: day.Add(time.Hour), Step: time.Hour, Dir: t.TempDir(), Rate: 100000}
	if res, _, err := export(t, k, opt); err != nil || res.Written != 1 {
		t.Fatalf("export: %+v, %v", res, err)
	}
	var b bson.Raw
	err := db.Collection("logs").FindOneAndUpdate(context.Background(), bson.D{{Key: model.MinTs, Value: bson.D{{Key: "$gte", Value: day}, {Key: "$lt", Value: day.Add(time.Hour)}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: model.Logs + ".0.level", Value: "changed"}}}}).Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	changed := b.Lookup(model.ID).StringValue()
	opt.Prune = true
	res, lines, err := export(t, k, opt)
	if err != nil || res.Deleted != 19 || res.Kept != 1 {
		t.Errorf("export --prune after an entry changed: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	if n := count(t, db, "logs", bson.D{{Key: model.ID, Value: changed}}); n != 1 {
		t.Errorf("the bucket whose entry changed was deleted")
	}
}

// A collection whose name holds "../" is exported into --dir all the
// same: its files are there, and nothing is written beside or above it.
func TestExportStaysInDir(t *testing.T) {
	db := testDB(t)
	coll := "x/../../ESCAPED"
	k := keys(t, db, "collection", coll, "bucket_key", "app", "dead_letter_ttl", "0")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	store(t, k, 10, rec{day.Add(time.Minute), `{"app":"a"}`}, rec{day.Add(2 * time.Minute), `{"app":"b"}`})
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	res, lines, err := export(t, k, ExportOptions{From: day, To: day.Add(time.Hour), Step: time.Hour, Dir: dir, Rate: 100000})
	if err != nil || res.Written != 1 || res.Records != 2 {
		t.Fatalf("export of %q: %+v, %v\n%s", coll, res, err, strings.Join(lines, "\n"))
	}
	var outside []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Dir(p) != dir {
			outside = append(outside, p)
		}
		return nil
	})
	if len(outside) != 0 {
		t.Errorf("files written outside --dir %s: %v", dir, outside)
	}
	files, mans := exported(t, dir)
	want := fmt.Sprintf("%s.x%%2F..%%2F..%%2FESCAPED.%s.1h.jsonl.gz", db.Name(), day.Format("20060102T150405Z"))
	if len(files[want]) != 2 || mans[want].Collection != coll {
		t.Errorf("files %v, want %s with 2 records and a manifest naming collection %q", slices.Sorted(maps.Keys(files)), want, coll)
	}
}

// Flat documents with their own id (id_action replace): a document
// replaced by a newer version between prune's read and its delete is
// kept: the delete names the version exported. Before, it deleted the
// newer version by _id, which no file held.
func TestExportPruneKeepsAReplacedDocument(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "mode", "flat", "id_key", "eid", "id_action", "replace", "dead_letter_ttl", "0")
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)
	store(t, k, 10, rec{day, `{"eid":"E1","v":1}`}, rec{day.Add(time.Minute), `{"eid":"E2","v":1}`})
	opt := ExportOptions{From: day, To: day.Add(time.Hour), Step: time.Hour, Dir: t.TempDir(), Prune: true, Rate: 100000}
	var lines []string
	opt.Report = func(s string) { lines = append(lines, s) }
	r := reader(t, k)
	r.beforeDelete = func() { store(t, k, 10, rec{day, `{"eid":"E1","v":2}`}) }
	res, err := r.Export(context.Background(), opt)
	if err != nil || res.Written != 1 || res.Deleted != 1 || res.Kept != 1 {
		t.Errorf("export --prune with E1 replaced before the delete: %+v, %v\n%s", res, err, strings.Join(lines, "\n"))
	}
	var d bson.M
	if err := db.Collection("logs").FindOne(context.Background(), bson.D{{Key: model.ID, Value: "E1"}}).Decode(&d); err != nil || fmt.Sprint(d["v"]) != "2" {
		t.Errorf("E1 after the prune: %v, %v; want version 2 kept", d, err)
	}
}

// exportCommands are the commands a Reader's client sends, counted by a
// command monitor; ctx is cancelled once they pass limit, so that a run
// that walks the calendar stops early.
type exportCommands struct {
	n      atomic.Int64
	limit  int64
	cancel context.CancelFunc
}

// monitoredReader is a Reader of the target of k whose client counts its
// commands in c.
func monitoredReader(t *testing.T, k map[string]string, c *exportCommands) *Reader {
	t.Helper()
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		switch e.CommandName {
		case "hello", "isMaster", "ismaster", "ping", "endSessions", "buildInfo", "getMore", "killCursors":
			return
		}
		if c.n.Add(1) > c.limit {
			c.cancel()
		}
	}}
	client, err := mongo.Connect(options.Client().ApplyURI(k["uri"]).SetMonitor(mon).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return &Reader{DB: client.Database(k["database"]), Cfg: config(t, k)}
}

// Seven records spread over 25 years, exported by day: the windows that
// hold documents are found from the data (a skip-scan on the time), so
// the commands sent are a few per window written, not one per day of the
// calendar, and an empty window gets neither file nor manifest. A run
// again finds the seven done and writes nothing more.
func TestExportFollowsTheData(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "bucket_key", "app", "dead_letter_ttl", "0")
	from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []rec
	for i, at := range []time.Time{from.Add(5 * time.Hour), time.Date(2003, 7, 15, 12, 0, 0, 0, time.UTC),
		time.Date(2008, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(2012, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2016, 11, 8, 8, 30, 0, 0, time.UTC), time.Date(2020, 3, 1, 1, 0, 0, 0, time.UTC), to.Add(-time.Second)} {
		recs = append(recs, rec{at, fmt.Sprintf(`{"app":"a","i":%d}`, i)})
	}
	store(t, k, 7, recs...)
	const perWindow, fixed = 4, 4 // commands: a few per window written, a few per run
	opt := ExportOptions{From: from, To: to, Step: 24 * time.Hour, Dir: t.TempDir()}
	for run := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		c := &exportCommands{limit: perWindow*7 + fixed, cancel: cancel}
		start := time.Now()
		res, err := monitoredReader(t, k, c).Export(ctx, opt)
		cancel()
		t.Logf("run %d: %+v in %v, %d commands", run+1, res, time.Since(start).Round(time.Millisecond), c.n.Load())
		if n := c.n.Load(); n > c.limit {
			t.Fatalf("run %d: more than %d commands for 7 windows of 9132 (stopped at %d windows): the calendar, not the data, sets the cost",
				run+1, c.limit, res.Windows)
		}
		want := Exported{Windows: 9132, Written: 7, Records: 7, Docs: 7}
		if run == 1 {
			want = Exported{Windows: 9132, Skipped: 7}
		}
		if err != nil || res != want {
			t.Fatalf("run %d: %+v, %v; want %+v", run+1, res, err, want)
		}
	}
	files, mans := exported(t, opt.Dir)
	if len(files) != 7 || len(mans) != 7 {
		t.Errorf("%d files and %d manifests, want 7 of each (none for an empty window)", len(files), len(mans))
	}
	for name, lines := range files {
		if len(lines) != 1 {
			t.Errorf("%s: %d records, want 1", name, len(lines))
		}
	}
}

// Two runs into one directory at once: the second stops before it writes
// anything, naming the first (its pid); once the first is killed (the
// kernel drops its lock), a run goes on and finishes the directory.
func TestExportHoldsTheDirectory(t *testing.T) {
	db := testDB(t)
	k, day := exportData(t, db)
	dir := t.TempDir()
	opt := ExportOptions{From: day, To: day.Add(4 * time.Hour), Step: time.Hour, Dir: dir}
	cmd := exec.Command(mongologBinary(t), "export", "--uri", k["uri"], "--database", db.Name(), "--collection", "logs", "--bucket_key", "app",
		"--count_by", "level", "--stats", "i", "--from", day.Format(time.RFC3339), "--to", day.Add(4*time.Hour).Format(time.RFC3339), "--step", "1h", "--dir", dir)
	cmd.Env = append(os.Environ(), "MONGOLOG_EXPORT_PAUSE=temp:2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if !waitLine(stderr, "paused at") {
		t.Fatal("the first export ended without pausing")
	}
	before, _ := filepath.Glob(filepath.Join(dir, "*"))
	res, _, err := export(t, k, opt)
	if want := fmt.Sprintf("pid %d on host", cmd.Process.Pid); err == nil || !strings.Contains(err.Error(), "in use by another mongolog export") ||
		!strings.Contains(err.Error(), want) || res.Windows != 0 {
		t.Fatalf("a second export into the directory: %+v, %v; want an error naming %q", res, err, want)
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "*")); !slices.Equal(before, after) {
		t.Errorf("the second run changed the directory: %q, then %q", before, after)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	res, _, err = export(t, k, opt)
	if err != nil || res.Written != 2 || res.Skipped != 1 {
		t.Fatalf("an export after the first was killed: %+v, %v; want the 2 windows left written", res, err)
	}
	files, mans := exported(t, dir)
	everyOnce(t, files, mans, exportRecords)
}
