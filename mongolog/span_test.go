package mongolog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
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

// The targets of a templated output are seeded by writing each through the
// plugin with a static configuration naming it: the documents are those a
// templated output stores there.

// nsTemplate is a collection template of a record field.
const nsTemplate = "k8s_$kubernetes['namespace_name']"

var spanT0 = time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)

// nsRecs are n records of namespace ns, the i-th at spanT0 + first + i*every
// seconds, with seq the second it is at.
func nsRecs(ns string, first, every, n int) []rec {
	var out []rec
	for i := range n {
		s := first + i*every
		out = append(out, rec{spanT0.Add(time.Duration(s) * time.Second),
			fmt.Sprintf(`{"kubernetes":{"namespace_name":%q},"seq":%d,"reqid":"%s-%d"}`, ns, s, ns, s)})
	}
	return out
}

// deadLetter is a document as the plugin parks a record.
func deadLetter(at time.Time) bson.D {
	return bson.D{{Key: model.ID, Value: "dl1"}, {Key: model.ParkedAt, Value: at}, {Key: model.Reason, Value: "refused"},
		{Key: model.Chunk, Value: "c1"}, {Key: model.Raw, Value: "x"}}
}

// seedNamespaces stores, in db, the namespaces web and pay of nsTemplate
// (interleaved in time), blue_dead (a namespace whose collection the
// dead-letter template also gives, holding records), the dead-letter
// collections k8s_web_dead and k8s_none_dead (empty), and other (not of
// the template).
func seedNamespaces(t *testing.T, db *mongo.Database) {
	t.Helper()
	store(t, keys(t, db, "collection", "k8s_web"), 3, nsRecs("web", 0, 2, 6)...)
	store(t, keys(t, db, "collection", "k8s_pay"), 3, nsRecs("pay", 1, 2, 6)...)
	store(t, keys(t, db, "collection", "k8s_blue_dead"), 3, nsRecs("blue_dead", 5, 10, 1)...)
	store(t, keys(t, db, "collection", "other"), 3, nsRecs("other", 3, 1, 2)...)
	insert(t, db, "k8s_web_dead", deadLetter(spanT0))
	if err := db.CreateCollection(context.Background(), "k8s_none_dead"); err != nil { // a dead-letter collection emptied
		t.Fatal(err)
	}
}

// spanOf is the span of the output of keys narrowed by sel.
func spanOf(t *testing.T, k map[string]string, sel Select) *Span {
	t.Helper()
	s, err := reader(t, k).Span(context.Background(), sel)
	if err != nil {
		t.Fatalf("span of %v: %v", sel, err)
	}
	return s
}

func places(s *Span) []string {
	var out []string
	for _, r := range s.Readers {
		out = append(out, r.Place().String())
	}
	return out
}

// queried is what query finds in s: "<collection>:<seq>" per record.
func queried(t *testing.T, s *Span, q Query) []string {
	t.Helper()
	var got []string
	var last time.Time
	err := s.Query(context.Background(), q, func(at Place, rec bson.Raw) error {
		ts := rec.Lookup(s.Cfg.TimeKey).Time()
		if ts.Before(last) {
			t.Errorf("%s at %s after a record at %s: not in time order", at, ts, last)
		}
		last = ts
		got = append(got, fmt.Sprintf("%s:%d", at.Collection, rec.Lookup("seq").AsInt64()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A collection template reads every collection it can give, in time order
// across them, and neither the dead-letter collection nor a collection it
// cannot give; a collection both templates give is read when it holds
// records. Globs narrow the targets; stats, verify and prune cover them
// all.
func TestSpanCollectionTemplate(t *testing.T) {
	db := testDB(t)
	seedNamespaces(t, db)
	k := keys(t, db, "collection", nsTemplate)
	all := spanOf(t, k, Select{})
	if want := []string{db.Name() + ".k8s_blue_dead", db.Name() + ".k8s_pay", db.Name() + ".k8s_web"}; !slices.Equal(places(all), want) || !all.Named {
		t.Fatalf("targets %q (named %v), want %q", places(all), all.Named, want)
	}
	want := "k8s_web:0 k8s_pay:1 k8s_web:2 k8s_pay:3 k8s_web:4 k8s_blue_dead:5 k8s_pay:5 k8s_web:6 k8s_pay:7 k8s_web:8 k8s_pay:9 k8s_web:10 k8s_pay:11"
	if got := strings.Join(queried(t, all, Query{}), " "); got != want {
		t.Errorf("query across the targets:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(queried(t, all, Query{Limit: 4, From: spanT0.Add(2 * time.Second)}), " "); got != "k8s_web:2 k8s_pay:3 k8s_web:4 k8s_blue_dead:5" {
		t.Errorf("query --from +2s --limit 4: %s", got)
	}
	web := spanOf(t, k, Select{Collection: "k8s_w*"})
	if got := strings.Join(queried(t, web, Query{}), " "); got != "k8s_web:0 k8s_web:2 k8s_web:4 k8s_web:6 k8s_web:8 k8s_web:10" {
		t.Errorf("query --collection 'k8s_w*': %s", got)
	}
	if glob := spanOf(t, keys(t, db), Select{Collection: "k8s_w*"}); !slices.Equal(places(glob), []string{db.Name() + ".k8s_web"}) {
		t.Errorf("a static output with --collection 'k8s_w*': targets %q, want k8s_web alone (not its dead letters)", places(glob))
	}
	if one := spanOf(t, k, Select{Collection: "k8s_pay"}); !slices.Equal(places(one), []string{db.Name() + ".k8s_pay"}) {
		t.Errorf("--collection k8s_pay: targets %q", places(one))
	}
	for _, sel := range []Select{{Collection: "other"}, {Collection: "k8s_web_dead"}, {Collection: "nope*"}} {
		if _, err := reader(t, k).Span(context.Background(), sel); err == nil || !strings.Contains(err.Error(), "k8s_blue_dead, "+db.Name()+".k8s_pay") {
			t.Errorf("%v, which no target meets: %v; want an error naming the targets", sel, err)
		}
	}
	windows, err := all.Stats(context.Background(), Query{}, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(windows) != 1 || windows[0].Records != 13 {
		t.Errorf("stats across the targets: %d windows, want one of 13 records: %+v", len(windows), windows)
	}
	var problems []Problem
	v, err := all.Verify(context.Background(), VerifyOptions{Unique: "reqid"}, func(p Problem) { problems = append(problems, p) })
	if err != nil || len(problems) > 0 || v.Collections != 3 || v.Records != 13 {
		t.Errorf("verify across the targets: %+v, %v, problems %v", v, err, problems)
	}
	pruned, err := web.Prune(context.Background(), PruneOptions{Before: time.Now(), Rate: 1000}, func(string) {})
	if err != nil || pruned.Records != 6 {
		t.Errorf("prune --collection 'k8s_w*': %+v, %v; want the 6 records of k8s_web", pruned, err)
	}
	if n := count(t, db, "k8s_web", bson.D{}); n != 0 || count(t, db, "k8s_pay", bson.D{}) == 0 || count(t, db, "other", bson.D{}) == 0 {
		t.Errorf("after prune of k8s_w*: k8s_web holds %d documents; k8s_pay and other must be kept", n)
	}
	pruned, err = spanOf(t, k, Select{}).Prune(context.Background(), PruneOptions{Before: time.Now(), Rate: 1000}, func(string) {})
	if err != nil || pruned.Records != 7 || count(t, db, "other", bson.D{}) == 0 || count(t, db, "k8s_web_dead", bson.D{}) != 1 {
		t.Errorf("prune of every target: %+v, %v; want the 7 records of k8s_pay and k8s_blue_dead, other and the dead letter kept", pruned, err)
	}
}

// Verify across the targets finds a write applied twice, and a value
// Unique meets twice, in two collections.
func TestSpanVerifyAcrossTargets(t *testing.T) {
	db := testDB(t)
	recs := nsRecs("web", 0, 1, 2)
	store(t, keys(t, db, "collection", "k8s_web"), 2, recs...)
	docs, err := db.Collection("k8s_web").Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var copies []bson.Raw
	for docs.Next(context.Background()) {
		copies = append(copies, append(bson.Raw(nil), docs.Current...))
	}
	_ = docs.Close(context.Background())
	for _, d := range copies {
		insert(t, db, "k8s_copy", d)
	}
	var problems []string
	_, err = spanOf(t, keys(t, db, "collection", nsTemplate), Select{}).Verify(context.Background(), VerifyOptions{Unique: "reqid"},
		func(p Problem) { problems = append(problems, p.String()) })
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(problems, "\n")
	if !strings.Contains(text, db.Name()+".k8s_web ") || !strings.Contains(text, "repeats entry 0 of "+db.Name()+".k8s_copy ") ||
		!strings.Contains(text, "has reqid web-0, as entry 0 of "+db.Name()+".k8s_copy ") {
		t.Errorf("verify of a bucket copied to a second target: problems\n%s\nwant the copy's entries named as repeats across the collections", text)
	}
}

// spanDBs is a unique prefix of database names for t, and a cleanup that
// drops the databases holding it.
func spanDBs(t *testing.T) string {
	t.Helper()
	prefix := fmt.Sprintf("ml%d_", time.Now().UnixNano()%1e9)
	c, err := mongo.Connect(options.Client().ApplyURI(serverURI(t)).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		names, _ := c.ListDatabaseNames(ctx, bson.D{})
		for _, n := range names {
			if strings.Contains(n, prefix) {
				_ = c.Database(n).Drop(ctx)
			}
		}
		_ = c.Disconnect(ctx)
	})
	return prefix
}

// A database template reads the collection in every database it can give
// that holds it, partitions included, in time order across them; a
// database it cannot give, or one without the collection, is not read.
func TestSpanDatabaseTemplate(t *testing.T) {
	prefix := spanDBs(t)
	uri := serverURI(t)
	static := func(db string) map[string]string {
		return map[string]string{"uri": uri, "database": db, "collection": "logs", "write_batch": "20", "partition": "day"}
	}
	day2 := func(rs []rec) []rec {
		for i := range rs {
			rs[i].at = rs[i].at.Add(24 * time.Hour)
		}
		return rs
	}
	store(t, static(prefix+"a"), 4, append(nsRecs("a", 0, 2, 3), day2(nsRecs("a", 0, 2, 3))...)...)
	store(t, static(prefix+"b"), 4, append(nsRecs("b", 1, 2, 3), day2(nsRecs("b", 1, 2, 3))...)...)
	store(t, map[string]string{"uri": uri, "database": prefix + "c", "collection": "other", "write_batch": "20", "partition": "day"}, 4, nsRecs("c", 0, 1, 2)...)
	store(t, static("x"+prefix+"z"), 4, nsRecs("z", 0, 1, 2)...) // not of the template: it starts with x
	k := static(prefix + "$TAG[0]")
	all := spanOf(t, k, Select{})
	if want := []string{prefix + "a.logs", prefix + "b.logs"}; !slices.Equal(places(all), want) {
		t.Fatalf("targets %q, want %q", places(all), want)
	}
	at := func(s *Span, q Query) string {
		var got []string
		for _, r := range queried(t, s, q) {
			got = append(got, strings.TrimPrefix(r, "logs:"))
		}
		return strings.Join(got, " ")
	}
	var names []string
	if err := all.Query(context.Background(), Query{Limit: 3}, func(p Place, _ bson.Raw) error {
		names = append(names, p.Database)
		return nil
	}); err != nil || !slices.Equal(names, []string{prefix + "a", prefix + "b", prefix + "a"}) {
		t.Errorf("the databases of the first 3 records: %q, %v", names, err)
	}
	if got := at(all, Query{}); got != "0 1 2 3 4 5 0 1 2 3 4 5" {
		t.Errorf("query across the databases and their partitions: %s", got)
	}
	if got := at(all, Query{From: spanT0.Add(24 * time.Hour)}); got != "0 1 2 3 4 5" {
		t.Errorf("query of the second day: %s", got)
	}
	b := spanOf(t, k, Select{Database: "*b"})
	if got := at(b, Query{}); !slices.Equal(places(b), []string{prefix + "b.logs"}) || got != "1 3 5 1 3 5" {
		t.Errorf("--database '*b': targets %q, records %s", places(b), got)
	}
	if _, err := reader(t, k).Span(context.Background(), Select{Database: "*q"}); err == nil ||
		!strings.Contains(err.Error(), prefix+"a.logs, "+prefix+"b.logs") {
		t.Errorf("--database '*q', which no database meets: %v; want an error naming the targets", err)
	}
	windows, err := all.Stats(context.Background(), Query{}, 24*time.Hour)
	if err != nil || len(windows) != 2 || windows[0].Records != 6 || windows[1].Records != 6 {
		t.Errorf("stats per day across the databases: %v, %+v", err, windows)
	}
	v, err := all.Verify(context.Background(), VerifyOptions{}, func(p Problem) { t.Errorf("verify: %s", p) })
	if err != nil || v.Collections != 4 || v.Records != 12 {
		t.Errorf("verify across the databases: %+v, %v; want 4 partitions of 12 records", v, err)
	}
	var lines []string
	p, err := b.Prune(context.Background(), PruneOptions{Before: time.Now(), Rate: 1000, DryRun: true}, func(s string) { lines = append(lines, s) })
	if err != nil || p.Records != 6 || len(lines) == 0 || !strings.HasPrefix(lines[0], "would delete "+prefix+"b.logs_20240601 ") {
		t.Errorf("prune --dry-run --database '*b': %+v, %v, lines %q", p, err, lines)
	}
}

// The command line: a templated output's records name their target, in
// time order; a glob narrows the read; a bad glob is a usage error; a
// static output prints as it always did; follow, export and doctor refuse
// several targets, naming the flags that pick one.
func TestSpanCommands(t *testing.T) {
	db := testDB(t)
	seedNamespaces(t, db)
	tpl := []string{"--uri", serverURI(t), "--database", db.Name(), "--collection", nsTemplate}
	out, errOut, code := mongolog(t, append([]string{"query"}, tpl...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 13 {
		t.Fatalf("query of the template: exit %d, %d lines\n%s\nstderr: %s", code, len(lines), out, errOut)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first["_db"] != db.Name() || first["_collection"] != "k8s_web" ||
		!strings.HasPrefix(lines[0], `{"_db":"`+db.Name()+`","_collection":"k8s_web",`) {
		t.Errorf("the first line names its target first: %s (%v)", lines[0], err)
	}
	out, _, code = mongolog(t, "query", "--uri", serverURI(t), "--database", db.Name(), "--collection", "k8s_p*")
	if n := strings.Count(out, `"_collection":"k8s_pay"`); code != 0 || n != 6 || strings.Count(out, "\n") != 6 {
		t.Errorf("query --collection 'k8s_p*': exit %d, %d of k8s_pay\n%s", code, n, out)
	}
	static, _, code := mongolog(t, "query", "--uri", serverURI(t), "--database", db.Name(), "--collection", "k8s_pay")
	if code != 0 || strings.Count(static, "\n") != 6 || strings.Contains(static, "_collection") {
		t.Errorf("query of a static output: exit %d; want its 6 records as they are stored\n%s", code, static)
	}
	out, _, code = mongolog(t, append([]string{"stats", "--step", "1d", "--no-chart"}, tpl...)...)
	if code != 0 || !strings.Contains(out, "2024-06-01T00:00:00Z  ") || !strings.Contains(out, " 13 ") {
		t.Errorf("stats of the template: exit %d\n%s", code, out)
	}
	out, _, code = mongolog(t, append([]string{"verify"}, tpl...)...)
	if code != 0 || !strings.Contains(out, "3 collections, ") || !strings.Contains(out, "13 records: 0 problems") {
		t.Errorf("verify of the template: exit %d\n%s", code, out)
	}
	out, _, code = mongolog(t, append([]string{"prune", "--older-than", "1d", "--dry-run"}, tpl...)...)
	if code != 0 || !strings.Contains(out, "would delete "+db.Name()+".k8s_blue_dead ") || !strings.Contains(out, "holding 13 records") {
		t.Errorf("prune --dry-run of the template: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	out, errOut, code = mongolog(t, append(append([]string{"export"}, tpl...), "--from", "2024-06-01", "--to", "2024-06-02", "--dir", dir)...)
	for _, want := range []string{".k8s_blue_dead: 1 windows", ".k8s_pay: 1 windows", ".k8s_web: 1 windows"} {
		if code != 0 || !strings.Contains(out, db.Name()+want) {
			t.Errorf("export of the template: exit %d, want a summary line %s%s\n%s%s", code, db.Name(), want, out, errOut)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, db.Name()+".k8s_*.jsonl.gz")); len(files) != 3 {
		t.Errorf("export of the template wrote %v, want a file for each of the 3 targets", files)
	}
	out, errOut, code = mongolog(t, append([]string{"doctor", "--json", "--interval", "1s"}, tpl...)...)
	for _, coll := range []string{"k8s_blue_dead", "k8s_pay", "k8s_web", "k8s_web_dead"} {
		if code == 2 || !strings.Contains(out, `"target":"`+db.Name()+"."+coll+`"`) {
			t.Errorf("doctor of the template: exit %d, no finding of %s.%s\n%s%s", code, db.Name(), coll, out, errOut)
		}
	}
	file := filepath.Join(t.TempDir(), "fluent-bit.conf")
	conf := fmt.Sprintf("[OUTPUT]\n    Name mongodb\n    Match *\n    uri %s\n    database %s\n    collection %s\n", serverURI(t), db.Name(), nsTemplate)
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := mongolog(t, "check", "-c", file); code != 0 {
		t.Errorf("check of a templated output: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = mongolog(t, "export", "-c", file, "--collection", "k8s_web", "--from", "2024-06-01", "--to", "2024-06-02", "--dir", t.TempDir())
	if code != 0 || !strings.Contains(out, db.Name()+".k8s_web: 1 windows") || !strings.Contains(out, "(6 records of ") {
		t.Errorf("export -c FILE --collection k8s_web, one target of the template by name: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = mongolog(t, "query", "--uri", "mongodb://127.0.0.1:1/", "--connect_timeout", "1s", "--collection", "k8s_[")
	if code != 2 || !strings.Contains(errOut, `--collection "k8s_[": not a glob`) {
		t.Errorf("a bad glob: exit %d, %s; want exit 2 before any I/O", code, errOut)
	}
}

// The dead-letter collection of a target is told by the names when they
// tell it: a static one, or the default <collection>_dead of a template
// however it is written.
func TestDeadLetterOf(t *testing.T) {
	for _, c := range []struct {
		kv         []string
		coll, want string
	}{
		{[]string{"collection", "k8s_$ns"}, "k8s_web", "k8s_web_dead"},
		{[]string{"collection", "k8s_$['ns']", "dead_letter_collection", "k8s_$['ns']_dead"}, "k8s_web", "k8s_web_dead"},
		{[]string{"collection", "$TAG"}, "app", "app_dead"},
		{[]string{"collection", "k8s_$ns", "dead_letter_collection", "parked"}, "k8s_web", "parked"},
		{[]string{"collection", "k8s_$ns", "dead_letter_collection", "dl_$['ns']"}, "k8s_web", ""},
		{[]string{"collection", "k8s_$ns"}, "k8s_" + strings.Repeat("v", 20) + "_0123456789abcdef", ""},
		{[]string{"collection", "logs"}, "logs", "logs_dead"},
	} {
		m := map[string]string{"uri": "mongodb://127.0.0.1:1", "database": "db"}
		for i := 0; i+1 < len(c.kv); i += 2 {
			m[c.kv[i]] = c.kv[i+1]
		}
		if got := deadLetterOf(config(t, m), c.coll); got != c.want {
			t.Errorf("%q, target %s: dead letters in %q, want %q", c.kv, c.coll, got, c.want)
		}
	}
}

// Following a templated output follows every target, each record once and
// named with its target, and a target made while it runs too.
func TestSpanFollowAcrossTargets(t *testing.T) {
	db := testDB(t)
	seedNamespaces(t, db)
	k := keys(t, db, "collection", nsTemplate)
	span := spanOf(t, k, Select{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}
	done := make(chan error, 1)
	go func() {
		done <- span.Follow(ctx, Query{}, 10*time.Millisecond, time.Minute, func(at Place, rec bson.Raw) error {
			mu.Lock()
			defer mu.Unlock()
			got[at.Collection]++
			return nil
		})
	}()
	seen := func(want map[string]int) bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Equal(got, want)
	}
	want := map[string]int{"k8s_web": 6, "k8s_pay": 6, "k8s_blue_dead": 1}
	waitUntil(t, "the records of the 3 targets", func() bool { return seen(want) })
	store(t, keys(t, db, "collection", "k8s_new"), 3, nsRecs("new", 20, 1, 2)...)
	want["k8s_new"] = 2
	waitUntil(t, "the records of the target made while following", func() bool { return seen(want) })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow: %v", err)
	}
	if !seen(want) {
		t.Errorf("follow printed %v, want %v", got, want)
	}
}

// waitUntil waits for cond, 30 seconds at most.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
