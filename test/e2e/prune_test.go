package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// prune deletes the buckets of one key whose records are all older than
// the age, across partitions, and nothing else; a dry run shows them and
// deletes nothing.
func TestPrune(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "device", "partition", "month"}
	in, _, log := monitored(t, e, props...)
	now := time.Now().UTC()
	var recs [][]byte
	for i, at := range []time.Time{now.AddDate(0, -2, 0), now.AddDate(0, 0, -10), now.Add(-time.Hour), now} {
		for _, dev := range []string{"abc123", "other"} {
			for j := 0; j < 5; j++ {
				recs = append(recs, record(t, at.Add(time.Duration(j)*time.Second), kv{"device", dev}, kv{"t", 20 + i}, kv{"j", fmt.Sprint(i, j)}))
			}
		}
	}
	mustDone(t, in.Flush("app.log", join(recs)), log)
	in.Exit()
	r := reader(t, e, props...)
	count := func(dev string) int {
		n := 0
		colls, _ := r.Collections(context.Background(), time.Time{}, time.Time{})
		for _, c := range colls {
			for _, d := range e.all(c) {
				if d.Lookup("key", "device").StringValue() == dev {
					n += int(d.Lookup("count").AsInt64())
				}
			}
		}
		return n
	}
	opt := mongolog.PruneOptions{Conds: []mongolog.Cond{{Field: "device", Op: "=", Value: "abc123"}}, Before: now.AddDate(0, 0, -7), Rate: 1000, DryRun: true}
	var shown []string
	p, err := r.Prune(context.Background(), opt, func(s string) { shown = append(shown, s) })
	if err != nil || p.Records != 10 || len(shown) != int(p.Docs) || !strings.Contains(strings.Join(shown, "\n"), "abc123") {
		t.Fatalf("dry run: %+v, %v, shown %q", p, err, shown)
	}
	if count("abc123") != 20 || count("other") != 20 {
		t.Fatalf("the dry run deleted: %d and %d records left", count("abc123"), count("other"))
	}
	opt.DryRun = false
	if p, err := r.Prune(context.Background(), opt, func(string) {}); err != nil || p.Records != 10 {
		t.Fatalf("prune: %+v, %v", p, err)
	}
	if a, o := count("abc123"), count("other"); a != 10 || o != 20 {
		t.Errorf("after prune: abc123 %d records (want the 10 of the last week), other %d (want 20)", a, o)
	}
	colls, _ := r.Collections(context.Background(), time.Time{}, time.Time{})
	for _, c := range colls {
		for _, d := range e.all(c) {
			if d.Lookup("key", "device").StringValue() == "abc123" && d.Lookup("maxTs").Time().Before(opt.Before) {
				t.Errorf("an old abc123 bucket is left in %s: %v", c, d.Lookup("_id"))
			}
		}
	}
	if _, err := r.Prune(context.Background(), mongolog.PruneOptions{Conds: []mongolog.Cond{{Field: "t", Op: "=", Value: "20"}}, Before: now}, func(string) {}); err == nil {
		t.Errorf("prune by a field that is not a bucket_key field: no error")
	}
}

// prune refuses a condition on a field that is not a bucket_key field
// before reading anything: the command prints the error only (no count of
// what would go) and exits 2, dry run or not, and deletes nothing.
func TestPruneRefusesABadConditionFirst(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "device"}
	in, _, log := monitored(t, e, props...)
	old := time.Now().UTC().AddDate(0, 0, -30)
	mustDone(t, in.Flush("app.log", join([][]byte{record(t, old, kv{"device", "abc123"}, kv{"t", 20})})), log)
	in.Exit()
	r := reader(t, e, props...)
	bad := mongolog.PruneOptions{Conds: []mongolog.Cond{{Field: "t", Op: "=", Value: "20"}}, Before: time.Now(), DryRun: true}
	if _, err := r.PruneFilter(bad); err == nil || !strings.Contains(err.Error(), "bucket_key fields only (device)") {
		t.Errorf("a condition on t: %v, want a refusal naming the bucket_key fields", err)
	}
	for _, dry := range [][]string{{"--dry-run"}, nil} {
		args := append(append([]string{"prune", "--older-than", "7d", "--bucket_key", "device"}, dry...), append(e.target("logs"), "t=20")...)
		out, errOut, code := runMongolog(t, "", nil, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "condition t=20") || strings.Contains(errOut, "would delete") {
			t.Errorf("prune %v t=20: exit %d, stdout %q, stderr %q; want exit 2 and the error only", dry, code, out, errOut)
		}
	}
	if n := len(e.all("logs")); n != 1 {
		t.Errorf("%d buckets left, want the 1 stored", n)
	}
	out, _, code := runMongolog(t, "", nil, append([]string{"prune", "--older-than", "7d", "--bucket_key", "device", "--dry-run"}, append(e.target("logs"), "device=abc123")...)...)
	if code != 0 || !strings.Contains(out, "would delete 1 documents holding 1 records") {
		t.Errorf("prune --dry-run device=abc123: exit %d\n%s", code, out)
	}
}

// A window exported and pruned; a late chunk, flushed by a restarted
// agent through the plugin, makes its bucket again: the same _id and the
// same count (bucket_max_records), other records. Exporting the window
// again keeps that bucket, names it and exits 1: its records are in no
// file.
func TestCLIExportPruneKeepsABucketMadeAgain(t *testing.T) {
	e := newEnv(t)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2)
	props := e.props("bucket_max_records", "5")
	chunk := func(name string) string {
		var recs [][]byte
		for i := range 5 {
			recs = append(recs, record(t, day.Add(time.Duration(i)*time.Second), kv{"id", fmt.Sprintf("%s%d", name, i)}, kv{"msg", "m"}))
		}
		return chunkFile(t, t.TempDir(), name, recs...)
	}
	e.init("a", props)
	e.mustFlush("a", "app", chunk("p"))
	e.exit("a")
	args := append([]string{"export", "--from", day.Format("2006-01-02"), "--to", day.AddDate(0, 0, 1).Format("2006-01-02"),
		"--dir", t.TempDir(), "--prune"}, e.target("logs")...)
	if out, errOut, code := runMongolog(t, "", nil, args...); code != 0 || !strings.Contains(out, "deleted 1 documents, 0 kept") {
		t.Fatalf("export --prune: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	e.restartHost()
	e.init("a", props)
	e.mustFlush("a", "app", chunk("late"))
	e.exit("a")
	docs := e.all("logs")
	if len(docs) != 1 || docs[0].Lookup("count").AsInt64() != 5 {
		t.Fatalf("after the late chunk: %d buckets, want 1 of 5 entries", len(docs))
	}
	out, errOut, code := runMongolog(t, "", nil, args...)
	if code != 1 || !strings.Contains(out, "deleted 0 documents, 1 kept") {
		t.Errorf("export --prune again: exit %d, want 1\n%s\nstderr: %s", code, out, errOut)
	}
	if count, _ := e.storedIDs("logs"); len(count) != 5 {
		t.Errorf("the late chunk's records left: %v, want late0-late4", count)
	}
}

// An export that fails before its first window prints the error alone,
// not a summary of no windows.
func TestCLIExportErrorWithoutSummary(t *testing.T) {
	e := newDBEnv(t)
	e.storeApps(t, 4)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	out, errOut, code := runMongolog(t, "", nil, append([]string{"export", "--from", day.Format("2006-01-02"),
		"--to", day.AddDate(0, 0, 1).Format("2006-01-02"), "--dir", notDir}, e.target("logs")...)...)
	if code == 0 || out != "" || errOut == "" {
		t.Errorf("export into a file: exit %d, stdout %q, stderr %q; want an error alone", code, out, errOut)
	}
}
