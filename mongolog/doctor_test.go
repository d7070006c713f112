package mongolog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// doctor runs doctor on the target of keys and returns its findings.
func doctor(t *testing.T, keys map[string]string, opt DoctorOptions) []Finding {
	t.Helper()
	r := reader(t, keys)
	if opt.Interval == 0 {
		opt.Interval = 10 * time.Millisecond
	}
	if opt.BacklogWait == 0 {
		opt.BacklogWait = -1 // judged by expiry alone: see TestDoctorBacklogAfterTwoPasses
	}
	var got []Finding
	d := &Doctor{Opt: opt, Report: func(f Finding) { got = append(got, f) }}
	if err := d.Check(context.Background(), r); err != nil {
		t.Fatalf("doctor: %v", err)
	}
	if err := d.Finish(context.Background()); err != nil {
		t.Fatalf("doctor: %v", err)
	}
	return got
}

// pick is the findings of check on target (database.collection) of
// severity sev ("" any).
func pick(fs []Finding, check, target, sev string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Check == check && f.Target == target && (sev == "" || f.Severity == sev) {
			out = append(out, f)
		}
	}
	return out
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %v\n", f, f.Numbers)
	}
	return b.String()
}

// insert writes docs into coll directly, as something other than the
// plugin would.
func insert(t *testing.T, db *mongo.Database, coll string, docs ...any) {
	t.Helper()
	if _, err := db.Collection(coll).InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
}

func makeIndex(t *testing.T, db *mongo.Database, coll string, m mongo.IndexModel) error {
	t.Helper()
	_, err := db.Collection(coll).Indexes().CreateOne(context.Background(), m)
	return err
}

// needTTLIndexes skips t on a server without TTL indexes.
func needTTLIndexes(t *testing.T, db *mongo.Database) {
	t.Helper()
	err := makeIndex(t, db, "ttl_probe", mongo.IndexModel{Keys: bson.D{{Key: model.ExpireAt, Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)})
	if refused(err) {
		t.Skipf("the server has no TTL indexes (%v; FerretDB v1 on SQLite): this check of expireAfterSeconds needs MONGO_URI (MongoDB, or FerretDB v2 on DocumentDB)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Documents without expireAt, or with an expireAt that is not a date, are
// counted (they never expire); so are documents past their expiry by more
// than two monitor passes, with the oldest.
func TestDoctorExpireFieldAndBacklog(t *testing.T) {
	db := testDB(t)
	now := time.Now().UTC()
	insert(t, db, "logs",
		bson.D{{Key: model.ID, Value: "int"}, {Key: model.ExpireAt, Value: 1717236000}},
		bson.D{{Key: model.ID, Value: "text"}, {Key: model.ExpireAt, Value: "2024-06-01"}},
		bson.D{{Key: model.ID, Value: "none"}},
		bson.D{{Key: model.ID, Value: "due"}, {Key: model.ExpireAt, Value: now.Add(-30 * time.Minute)}},
		bson.D{{Key: model.ID, Value: "old1"}, {Key: model.ExpireAt, Value: now.Add(-10 * time.Hour)}},
		bson.D{{Key: model.ID, Value: "old2"}, {Key: model.ExpireAt, Value: now.Add(-5 * time.Hour)}})
	fs := doctor(t, keys(t, db, "ttl", "1h", "dead_letter_ttl", "0"), DoctorOptions{})
	target := db.Name() + ".logs"
	field := pick(fs, CheckExpireField, target, SevProblem)
	if len(field) != 2 || !strings.Contains(field[0].Message, "1 documents have no expireAt") || field[0].Numbers["missing"] != 1 ||
		!strings.Contains(field[1].Message, "2 documents hold expireAt as something other than a BSON date") || field[1].Numbers["not_date"] != 2 ||
		!strings.Contains(field[1].Advice, `$type: "date"`) {
		t.Errorf("expire-field findings:\n%s", dump(fs))
	}
	// Expired 10h and 5h ago, past ttl 1h and two passes of 60s; the one
	// due 30 minutes ago is within its hour.
	backlog := pick(fs, CheckBacklog, target, SevProblem)
	if len(backlog) != 1 || backlog[0].Numbers["count"] != 2 || !strings.Contains(backlog[0].Message, "the oldest expired 9h") ||
		backlog[0].Numbers["oldest_overdue_seconds"] < 9*3600 || backlog[0].Numbers["oldest_overdue_seconds"] > 9*3600+600 ||
		!strings.Contains(backlog[0].Message, "no TTL index deletes them") {
		t.Errorf("backlog findings:\n%s", dump(fs))
	}
	// Without ttl nothing is asked of expireAt.
	fs = doctor(t, keys(t, db, "dead_letter_ttl", "0"), DoctorOptions{})
	if len(pick(fs, CheckExpireField, target, "")) != 0 || len(pick(fs, CheckBacklog, target, "")) != 0 {
		t.Errorf("ttl 0 and no TTL index: expiry findings:\n%s", dump(fs))
	}
}

// Documents written just now with an old expiry (old lines imported) are
// not a backlog when the TTL monitor's next two passes delete them; those
// still there after them are. The monitor's two passes are stood for by a
// hook (the test server does not count its passes, and its own monitor
// deletes within a minute): one that deletes what has expired, as
// MongoDB's does, and one that deletes nothing, as a stuck one.
func TestDoctorBacklogAfterTwoPasses(t *testing.T) {
	db := testDB(t)
	needTTLIndexes(t, db)
	if err := makeIndex(t, db, "logs", mongo.IndexModel{Keys: bson.D{{Key: model.ExpireAt, Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)}); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("logs")
	old := time.Now().UTC().Add(-10 * time.Hour).Truncate(time.Millisecond)
	docs := func() {
		for _, id := range []string{"a", "b", "c"} {
			_, err := c.ReplaceOne(context.Background(), bson.D{{Key: model.ID, Value: id}},
				bson.D{{Key: model.ID, Value: id}, {Key: model.ExpireAt, Value: old}}, options.Replace().SetUpsert(true))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	target := db.Name() + ".logs"
	for _, m := range []struct {
		name    string
		pass    func(ctx context.Context) error
		backlog bool
	}{
		{"a monitor that deletes what has expired", func(ctx context.Context) error {
			_, err := c.DeleteMany(ctx, bson.D{{Key: model.ExpireAt, Value: bson.D{{Key: "$lt", Value: time.Now().Add(-time.Hour)}}}})
			return err
		}, false},
		{"a stuck monitor", func(ctx context.Context) error { docs(); return nil }, true},
	} {
		var fs []Finding
		waited := false
		// The server's own monitor may delete them before they are
		// counted: then they are written again.
		for try := 0; try < 10 && !waited; try++ {
			docs()
			fs = nil
			d := &Doctor{Opt: DoctorOptions{Interval: 10 * time.Millisecond}, Report: func(f Finding) { fs = append(fs, f) },
				passes: func(ctx context.Context, _ *mongo.Database) error { return m.pass(ctx) }}
			if err := d.Check(context.Background(), reader(t, keys(t, db, "ttl", "1h", "dead_letter_ttl", "0"))); err != nil {
				t.Fatal(err)
			}
			if err := d.Finish(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				waited = waited || f.Check == CheckBacklog && f.Severity == SevInfo && strings.Contains(f.Message, "3 documents in 1 collections are past their expiry")
			}
		}
		if !waited {
			t.Fatalf("%s: doctor did not wait for the monitor's passes:\n%s", m.name, dump(fs))
		}
		problems, passed := pick(fs, CheckBacklog, target, SevProblem), pick(fs, CheckBacklog, target, SevOK)
		switch {
		case m.backlog && (len(problems) != 1 || len(passed) != 0 || problems[0].Numbers["count"] != 3 ||
			!strings.Contains(problems[0].Message, "and were still there after the TTL monitor's next two passes; the oldest expired 9h")):
			t.Errorf("%s: want a backlog of 3 documents:\n%s", m.name, dump(fs))
		case !m.backlog && (len(problems) != 0 || len(passed) != 1 || passed[0].Numbers["deleted"] != 3 ||
			!strings.Contains(passed[0].Message, "written after their expiry (old lines imported), not a backlog")):
			t.Errorf("%s: want no backlog:\n%s", m.name, dump(fs))
		}
	}
}

// An index on expireAt that is descending, plain or compound is named as
// a problem, and so is none at all.
func TestDoctorTTLIndexShapes(t *testing.T) {
	db := testDB(t)
	for coll, m := range map[string]mongo.IndexModel{
		"desc":     {Keys: bson.D{{Key: model.ExpireAt, Value: -1}}},
		"plain":    {Keys: bson.D{{Key: model.ExpireAt, Value: 1}}},
		"compound": {Keys: bson.D{{Key: model.Key, Value: 1}, {Key: model.ExpireAt, Value: 1}}},
		"none":     {Keys: bson.D{{Key: model.Key, Value: 1}}},
	} {
		insert(t, db, coll, bson.D{{Key: model.ExpireAt, Value: time.Now()}})
		if err := makeIndex(t, db, coll, m); err != nil {
			t.Fatal(err)
		}
	}
	for coll, want := range map[string]string{
		"desc":     "is descending ({expireAt: -1})",
		"plain":    "is a plain index, not a TTL index: documents never expire by ttl 1h",
		"compound": "expireAt is only in compound index key_1_expireAt_1: a TTL index must be on expireAt alone",
		"none":     "no TTL index on expireAt: documents never expire by ttl 1h",
	} {
		fs := doctor(t, keys(t, db, "collection", coll, "ttl", "1h", "dead_letter_ttl", "0"), DoctorOptions{})
		got := pick(fs, CheckTTLIndex, db.Name()+"."+coll, SevProblem)
		if len(got) != 1 || !strings.Contains(got[0].Message, want) || got[0].Advice == "" {
			t.Errorf("%s: want a problem %q:\n%s", coll, want, dump(fs))
		}
	}
}

// A TTL index whose expireAfterSeconds is not what ttl (dead_letter_ttl)
// asks is a problem, one that is a TTL index as asked passes, and one left
// while ttl is 0 is a warning.
func TestDoctorTTLIndexSeconds(t *testing.T) {
	db := testDB(t)
	needTTLIndexes(t, db)
	future := time.Now().Add(24 * time.Hour)
	for coll, after := range map[string]int32{"logs": 60, "logs_dead": 86400, "right": 3600, "left": 600} {
		field := model.ExpireAt
		if coll == "logs_dead" {
			field = model.ParkedAt
		}
		insert(t, db, coll, bson.D{{Key: field, Value: future}})
		if err := makeIndex(t, db, coll, mongo.IndexModel{Keys: bson.D{{Key: field, Value: 1}}, Options: options.Index().SetExpireAfterSeconds(after)}); err != nil {
			t.Fatal(err)
		}
	}
	fs := doctor(t, keys(t, db, "ttl", "1h", "dead_letter_ttl", "2d"), DoctorOptions{})
	logs := pick(fs, CheckTTLIndex, db.Name()+".logs", SevProblem)
	if len(logs) != 1 || !strings.Contains(logs[0].Message, "has expireAfterSeconds 60, ttl asks 3600 (1h)") ||
		!strings.Contains(logs[0].Advice, `collMod: "logs", index: {name: "expireAt_1", expireAfterSeconds: 3600}`) {
		t.Errorf("logs, expireAfterSeconds 60 for ttl 1h:\n%s", dump(fs))
	}
	dead := pick(fs, CheckTTLIndex, db.Name()+".logs_dead", SevProblem)
	if len(dead) != 1 || !strings.Contains(dead[0].Message, "has expireAfterSeconds 86400, dead_letter_ttl asks 172800") {
		t.Errorf("logs_dead, expireAfterSeconds 86400 for dead_letter_ttl 2d:\n%s", dump(fs))
	}
	fs = doctor(t, keys(t, db, "collection", "right", "ttl", "1h", "dead_letter_ttl", "0"), DoctorOptions{})
	if ok := pick(fs, CheckTTLIndex, db.Name()+".right", SevOK); len(ok) != 1 || len(pick(fs, CheckTTLIndex, db.Name()+".right", "")) != 1 {
		t.Errorf("right, expireAfterSeconds 3600 for ttl 1h: want one ok:\n%s", dump(fs))
	}
	fs = doctor(t, keys(t, db, "collection", "left", "dead_letter_ttl", "0"), DoctorOptions{})
	if w := pick(fs, CheckTTLIndex, db.Name()+".left", SevWarning); len(w) != 1 || !strings.Contains(w[0].Message, "though ttl is 0") {
		t.Errorf("left, a TTL index and ttl 0: want a warning:\n%s", dump(fs))
	}
}

// A partition older than partition_keep keeps is named; the kept ones
// are not. A partition without the plugin's indexes is named too.
func TestDoctorPartitions(t *testing.T) {
	db := testDB(t)
	at := time.Now()
	today := "logs_" + at.UTC().Format("20060102")
	k := keys(t, db, "partition", "day", "partition_keep", "2", "dead_letter_ttl", "0", "bucket_key", "app")
	store(t, k, 10, rec{at, `{"app":"a"}`})
	insert(t, db, "logs_20200101", bson.D{{Key: model.Count, Value: 0}})
	fs := doctor(t, k, DoctorOptions{})
	stale := pick(fs, CheckPartitions, db.Name()+".logs_20200101", SevProblem)
	if len(stale) != 1 || !strings.Contains(stale[0].Message, "partition logs_20200101 lies before the 2 days partition_keep keeps") ||
		!strings.Contains(stale[0].Advice, "db.logs_20200101.drop()") || len(pick(fs, CheckPartitions, db.Name()+"."+today, "")) != 0 {
		t.Errorf("a partition of 2020 with partition_keep 2:\n%s", dump(fs))
	}
	if miss := pick(fs, CheckIndexes, db.Name()+".logs_20200101", SevProblem); len(miss) != 1 || !strings.Contains(miss[0].Message, "{key: 1, start: 1}") {
		t.Errorf("the partition made by hand lacks the lookup index:\n%s", dump(fs))
	}
	if ok := pick(fs, CheckIndexes, db.Name()+"."+today, SevOK); len(ok) != 1 {
		t.Errorf("the partition the plugin made has its indexes:\n%s", dump(fs))
	}
	// The user's indexes count as the plugin's: asked for now, missing.
	k["indexes"] = "app+start:-1"
	fs = doctor(t, k, DoctorOptions{})
	if miss := pick(fs, CheckIndexes, db.Name()+"."+today, SevProblem); len(miss) != 1 || !strings.Contains(miss[0].Message, "{app: 1, start: -1}") {
		t.Errorf("indexes app+start:-1 asked after the partition was made:\n%s", dump(fs))
	}
}

// --ttl says how many documents a ttl would expire at once, and whether the
// plugin spreads them (above ttl_burst_limit) or the monitor takes them.
func TestDoctorTTLChange(t *testing.T) {
	db := testDB(t)
	now := time.Now()
	var docs []any
	for i := range 7 {
		age := 3 * 24 * time.Hour
		if i >= 5 {
			age = time.Hour
		}
		docs = append(docs, bson.D{{Key: model.ExpireAt, Value: now.Add(-age)}})
	}
	insert(t, db, "logs", docs...)
	target := db.Name() + ".logs"
	for limit, want := range map[string]string{
		"3":   "ttl 1d expires 5 documents at once, above ttl_burst_limit 3: the plugin spreads it, deleting them itself at ttl_delete_rate 2/s (about 3s)",
		"100": "ttl 1d expires 5 documents at once, within ttl_burst_limit 100: the TTL monitor deletes them",
	} {
		fs := doctor(t, keys(t, db, "ttl", "7d", "ttl_burst_limit", limit, "ttl_delete_rate", "2", "dead_letter_ttl", "0"), DoctorOptions{TTL: 24 * time.Hour})
		got := pick(fs, CheckTTLChange, target, SevInfo)
		if len(got) != 1 || !strings.Contains(got[0].Message, want) || got[0].Numbers["expire_at_once"] != 5 {
			t.Errorf("ttl_burst_limit %s, --ttl 1d: want %q:\n%s", limit, want, dump(fs))
		}
	}
	fs := doctor(t, keys(t, db, "dead_letter_ttl", "0"), DoctorOptions{TTL: 30 * 24 * time.Hour})
	if got := pick(fs, CheckTTLChange, target, SevInfo); len(got) != 1 || !strings.Contains(got[0].Message, "no document expires at once") {
		t.Errorf("--ttl 30d: want nothing expiring at once:\n%s", dump(fs))
	}
}

// The TTL monitor is checked once per server: a server that refuses
// getParameter or has no metrics.ttl is named in a line, not an error.
func TestDoctorMonitor(t *testing.T) {
	db := testDB(t)
	cfg := config(t, keys(t, db))
	fs := doctor(t, keys(t, db), DoctorOptions{})
	mon := pick(fs, CheckTTLMonitor, cfg.Redacted(), "")
	if len(mon) != 2 {
		t.Fatalf("want two ttl-monitor findings (its settings, its passes):\n%s", dump(fs))
	}
	if p := mon[1]; p.Severity == SevOK && (p.Numbers["interval_seconds"] != 0.01 || !strings.Contains(p.Message, "TTL monitor passes deleted")) {
		t.Errorf("the monitor's passes:\n%s", dump(fs))
	}
	// Two outputs on one server: one check of its monitor.
	dir := t.TempDir()
	file := write(t, dir, "fb.conf", fmt.Sprintf("[OUTPUT]\n    Name mongodb\n    uri %s\n    database %s\n    collection a\n    dead_letter_ttl 0\n"+
		"[OUTPUT]\n    Name mongodb\n    Alias two\n    uri %s\n    database %s\n    collection b\n    dead_letter_ttl 0\n", cfg.URI, db.Name(), cfg.URI, db.Name()))
	outs, err := Target{File: file}.Outputs(nil)
	if err != nil || len(outs) != 2 || outs[0].Name != file+":1" || outs[1].Name != "two" || outs[1].Cfg.Collection != "b" {
		t.Fatalf("outputs of %s: %+v, %v", file, outs, err)
	}
	var got []Finding
	d := &Doctor{Opt: DoctorOptions{Interval: 10 * time.Millisecond}, Report: func(f Finding) { got = append(got, f) }}
	for _, o := range outs {
		db, closeFn, err := Connect(context.Background(), o.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = d.Check(context.Background(), &Reader{DB: db, Cfg: o.Cfg})
		closeFn()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(pick(got, CheckTTLMonitor, cfg.Redacted(), "")); n != 2 || len(pick(got, CheckCollection, db.Name()+".b", SevInfo)) != 1 {
		t.Errorf("two outputs on one server: %d ttl-monitor findings, want 2:\n%s", n, dump(got))
	}
}

var mongologBin struct {
	once sync.Once
	path string
	err  error
}

// mongologBinary is the mongolog command built from the tree, once.
func mongologBinary(t *testing.T) string {
	t.Helper()
	mongologBin.once.Do(func() {
		dir, err := packageDir()
		if err != nil {
			mongologBin.err = err
			return
		}
		mongologBin.path = filepath.Join(dir, "mongolog")
		out, err := exec.Command("go", "build", "-o", mongologBin.path, "../cmd/mongolog").CombinedOutput()
		if err != nil {
			mongologBin.err = fmt.Errorf("building mongolog: %v\n%s", err, out)
		}
	})
	if mongologBin.err != nil {
		t.Fatal(mongologBin.err)
	}
	return mongologBin.path
}

// mongolog runs the binary with args and returns its output and exit code.
func mongolog(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(mongologBinary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running mongolog %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// The command exits 0 on a clean target and 1 on one with a problem; its
// JSON lines have the same shape every time.
func TestDoctorCommand(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "bucket_key", "app", "dead_letter_ttl", "0")
	store(t, k, 10, rec{time.Now().Add(-time.Minute), `{"app":"a"}`})
	target := []string{"doctor", "--uri", k["uri"], "--database", db.Name(), "--collection", "logs", "--bucket_key", "app", "--dead_letter_ttl", "0", "--interval", "10ms"}
	out, errOut, code := mongolog(t, target...)
	if code != 0 || !strings.Contains(out, "1 outputs: 0 problems") || strings.Contains(out, "ok indexes") {
		t.Errorf("doctor of a clean target: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	if out, _, code := mongolog(t, append(target, "-v")...); code != 0 || !strings.Contains(out, "ok indexes "+db.Name()+".logs: the 1 indexes the plugin creates are there") {
		t.Errorf("doctor -v of a clean target: exit %d\n%s", code, out)
	}
	insert(t, db, "logs", bson.D{{Key: model.ExpireAt, Value: 5}})
	out, errOut, code = mongolog(t, append(target, "--ttl", "1h", "--new_ttl", "30m", "--format", "json")...)
	if code != 1 {
		t.Errorf("doctor --json of a target with problems: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
	var checks []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		for _, k := range []string{"check", "target", "severity", "message", "advice", "numbers"} {
			if _, ok := f[k]; !ok {
				t.Errorf("a finding without %s: %s", k, line)
			}
		}
		if _, ok := f["numbers"].(map[string]any); !ok {
			t.Errorf("numbers is not an object: %s", line)
		}
		checks = append(checks, fmt.Sprint(f["check"], " ", f["severity"]))
	}
	for _, want := range []string{"ttl-index problem", "expire-field problem", "indexes ok", "ttl-change info", "space ok"} {
		if !slices.Contains(checks, want) {
			t.Errorf("doctor --json: no %q among %q", want, checks)
		}
	}
	if _, errOut, code := mongolog(t, "doctor", "--uri", k["uri"], "--new_ttl", "soon"); code != 2 || !strings.Contains(errOut, `--new_ttl "soon"`) {
		t.Errorf("doctor --new_ttl soon: exit %d, %s", code, errOut)
	}
}

// With TTL indexes, a target the plugin set up with a ttl is clean.
func TestDoctorCleanWithTTL(t *testing.T) {
	db := testDB(t)
	needTTLIndexes(t, db)
	k := keys(t, db, "bucket_key", "app", "ttl", "1d", "dead_letter_ttl", "0")
	store(t, k, 10, rec{time.Now().Add(-time.Minute), `{"app":"a"}`})
	out, errOut, code := mongolog(t, "doctor", "--uri", k["uri"], "--database", db.Name(), "--collection", "logs", "--bucket_key", "app",
		"--ttl", "1d", "--dead_letter_ttl", "0", "--interval", "10ms", "-v")
	if code != 0 || !strings.Contains(out, "ok ttl-index") || !strings.Contains(out, "ok expire-field") || !strings.Contains(out, "ok backlog") {
		t.Errorf("doctor of a target with ttl 1d as the plugin made it: exit %d\n%s\nstderr: %s", code, out, errOut)
	}
}

// Durations and numbers read as a person writes them.
func TestHumanUnits(t *testing.T) {
	for d, want := range map[time.Duration]string{
		8628*time.Hour + 37*time.Minute:   "359d12h",
		72 * time.Hour:                    "3d",
		26*time.Hour + 5*time.Minute:      "26h5m",
		time.Hour:                         "1h",
		90*time.Second + time.Millisecond: "1m30s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %s, want %s", d, got, want)
		}
	}
	for f, want := range map[float64]string{1020148: "1020148", 0.5: "0.5", -3: "-3", 1e21: "1000000000000000000000"} {
		if got := numText(f); got != want {
			t.Errorf("numText(%v) = %s, want %s", f, got, want)
		}
	}
}
