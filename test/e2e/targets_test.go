package e2e

// Targets from the record: database and collection named by templates of
// the tag and record fields, through the real .so (and a real Fluent Bit
// when one is on PATH).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// nsCase is a namespace value and the collection it must land in.
type nsCase struct {
	value any // nil: no kubernetes field at all
	coll  string
}

// nsCases are ordinary, missing and hostile values of namespace_name under
// the template k8s_$kubernetes['namespace_name'].
// In database db, a value of 10 KB gives a name cut to fit, ending in a
// hash of the whole.
func nsCases(t *testing.T, db string) []nsCase {
	long := strings.Repeat("n", 10<<10)
	tm, err := naming.Parse("k8s_$kubernetes['namespace_name']")
	if err != nil {
		t.Fatal(err)
	}
	dbt, err := naming.ParseDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	_, longName, _ := naming.Pair{Database: dbt, Collection: tm}.Resolve("", mustRaw(t, bson.D{{Key: "kubernetes", Value: bson.D{{Key: "namespace_name", Value: long}}}}))
	if len(longName) > 255-1-len(db) || !strings.HasPrefix(longName, "k8s_nnnn") {
		t.Fatalf("the long value resolves to %q (%d bytes)", longName, len(longName))
	}
	return []nsCase{
		{"default", "k8s_default"},
		{"kube-system", "k8s_kube-system"},
		{nil, "k8s_unknown"},
		{"", "k8s_unknown"},
		{bson.D{{Key: "x", Value: 1}}, "k8s_unknown"},
		{"$where", "k8s__where"},
		{"../etc", "k8s____etc"},
		{"a\x00b", "k8s_a_b"},
		{"\xff\xfe", "k8s____"}, // stored as U+FFFD (3 bytes)
		{"system.users", "k8s_system_users"},
		{int32(42), "k8s_42"},
		{long, longName},
	}
}

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// nsChunk writes one chunk holding, for each case, two records (ids
// <prefix><case>-0 and -1) and returns it with the ids by collection.
func nsChunk(t *testing.T, prefix string, cases []nsCase) (string, map[string][]string) {
	t.Helper()
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	ids := map[string][]string{}
	for i, c := range cases {
		for j := range 2 {
			id := fmt.Sprintf("%s%02d-%d", prefix, i, j)
			body := []kv{{"id", id}, {"msg", "hello"}}
			if c.value != nil {
				body = append(body, kv{"kubernetes", map[string]any{"namespace_name": c.value, "pod_name": fmt.Sprintf("pod-%d", j)}})
			}
			recs = append(recs, record(t, at.Add(time.Duration(len(recs))*time.Millisecond), body...))
			ids[c.coll] = append(ids[c.coll], id)
		}
	}
	return chunkFile(t, t.TempDir(), prefix, recs...), ids
}

// indexKeys lists the key patterns of coll's indexes but _id's, sorted.
func indexKeys(t *testing.T, db *mongo.Database, coll string) []string {
	t.Helper()
	cur, err := db.Collection(coll).Indexes().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for cur.Next(context.Background()) {
		k := cur.Current.Lookup("key").Document().String()
		if k != `{"_id": {"$numberInt":"1"}}` && k != `{"_id": 1}` {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Records of two tags and many namespace values, hostile ones included,
// land in the collection their value names, exactly once each, also when
// the chunks are sent again after a restart; every collection gets the
// indexes a static one gets; nothing else is created but their dead-letter
// collections.
func TestTargetsFromRecord(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			cases := nsCases(t, e.dbName)
			a, idsA := nsChunk(t, "a", cases)
			b, idsB := nsChunk(t, "b", cases)
			props := e.modeProps(mode, "bucket_key", "kubernetes.pod_name", "indexes", "msg")
			props["collection"] = "k8s_$kubernetes['namespace_name']"
			e.init("a", props)
			e.mustFlush("a", "kube.one", a)
			e.mustFlush("a", "kube.two", b)
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "kube.one", a)
			e.mustFlush("a", "kube.two", b)
			e.exit("a")

			want := map[string]bool{}
			for _, c := range cases {
				want[c.coll] = true
			}
			static := indexKeys(t, e.db, "k8s_default")
			if mode == "bucket" && !slices.Contains(static, `{"msg": {"$numberInt":"1"}}`) {
				t.Errorf("k8s_default lacks the user's index on msg: %v", static)
			}
			if len(static) == 0 {
				t.Errorf("k8s_default has no index but _id")
			}
			for coll := range want {
				count, _ := e.storedIDs(coll)
				checkOnce(t, count, append(idsA[coll], idsB[coll]...)...)
				if got := indexKeys(t, e.db, coll); !slices.Equal(got, static) {
					t.Errorf("%s has indexes %v, want %v as k8s_default", coll, got, static)
				}
			}
			names, err := e.db.ListCollectionNames(context.Background(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if !want[n] && !strings.HasSuffix(n, "_dead") {
					t.Errorf("collection %s was created; no record names it", n)
				}
			}
		})
	}
}

// Placeholders read the record as it is stored: a field the parser made,
// a value types converted, a key renamed (a.b stored as a_b), a field
// named like time_key (stored as _ts); an excluded field is missing.
func TestTargetsReadStoredRecord(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	c := chunkFile(t, t.TempDir(), "c",
		record(t, at, kv{"id", "r1"}, kv{"log", "level=warn code=0503"}, kv{"ts", "x1"}, kv{"a.b", "v"}, kv{"secret", "s"}),
		record(t, at.Add(time.Millisecond), kv{"id", "r2"}, kv{"log", "level=info code=7"}, kv{"ts", "x2"}, kv{"a.b", "w"}))
	props := e.props("mode", "flat", "parser", "logfmt", "types", "code:integer", "exclude_fields", "secret",
		"collection", "k_$['level']_$['code']_$['_ts']_$['a_b']_$['secret']")
	e.init("a", props)
	e.mustFlush("a", "app", c)
	e.exit("a")
	for coll, id := range map[string]string{"k_warn_503_x1_v_unknown": "r1", "k_info_7_x2_w_unknown": "r2"} {
		count, _ := e.storedIDs(coll)
		checkOnce(t, count, id)
	}
	names, err := e.db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		t.Errorf("collections %v, want k_warn_503_x1_v_unknown and k_info_7_x2_w_unknown", names)
	}
}

// A database template of the tag: each tag's records go to their own
// database, set up like a static one; partition_keep drops the stale
// partitions of every base the template can give in each, also of bases
// no record named, and leaves other collections alone.
func TestTargetsDatabaseFromTag(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	client := e.db.Client()
	dbs := []string{e.dbName + "_a", e.dbName + "_b"}
	t.Cleanup(func() {
		for _, d := range dbs {
			_ = client.Database(d).Drop(context.Background())
		}
	})
	stale := []string{"logs_x_20200101", "logs_old_20200101"}
	for _, n := range append(stale, "other_20200101", "logs_x") {
		if err := client.Database(dbs[0]).CreateCollection(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	at := func(i int) time.Time { return now.Add(time.Duration(i) * time.Millisecond) }
	dir := t.TempDir()
	x := chunkFile(t, dir, "x", idRecord(t, at(0), "X0", 10), idRecord(t, at(1), "X1", 10))
	y := chunkFile(t, dir, "y", idRecord(t, at(2), "Y0", 10))
	props := e.props("database", e.dbName+"_$TAG[1]", "collection", "logs_$TAG[2]", "partition", "day", "partition_keep", "2")
	e.init("a", props)
	e.mustFlush("a", "k.a.x", x)
	e.mustFlush("a", "k.B.y", y) // database values are lower-cased
	e.exit("a")

	part := "_" + now.Format("20060102")
	for _, c := range []struct {
		db, coll string
		ids      []string
	}{{dbs[0], "logs_x" + part, []string{"X0", "X1"}}, {dbs[1], "logs_y" + part, []string{"Y0"}}} {
		sub := &env{t: t, db: client.Database(c.db)}
		count, _ := sub.storedIDs(c.coll)
		checkOnce(t, count, c.ids...)
		if len(indexKeys(t, sub.db, c.coll)) == 0 {
			t.Errorf("%s.%s has no index but _id", c.db, c.coll)
		}
	}
	names, err := client.Database(dbs[0]).ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range stale {
		if slices.Contains(names, n) {
			t.Errorf("stale partition %s.%s was not dropped: %v", dbs[0], n, names)
		}
	}
	for _, n := range []string{"other_20200101", "logs_x"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s.%s is not a partition of the template, but was dropped", dbs[0], n)
		}
	}
}

// Past target_limit, records of further targets go to the overflow target
// (exactly once, also when resent), and the plugin says so.
func TestTargetsOverflow(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	for i := range 6 {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"id", fmt.Sprintf("r%d", i)}, kv{"ns", fmt.Sprintf("n%d", i%3)}))
	}
	c := chunkFile(t, t.TempDir(), "c", recs...)
	addr := freeAddr(t)
	props := e.props("collection", "k_$ns", "target_limit", "2", "target_overflow", "spill", "instance_name", "k", "metrics_listen", addr)
	e.init("a", props)
	e.mustFlush("a", "app", c)
	if !waitLog(e.host, "2 records went to an overflow target since the last report (k_spill)") {
		t.Errorf("no overflow warning:\n%s", e.host.Stderr())
	}
	if got := scrape(t, addr)["out_mongodb_records_overflowed_total"]["output=k"]; got != 2 {
		t.Errorf("out_mongodb_records_overflowed_total = %v, want 2", got)
	}
	e.exit("a")
	delete(props, "metrics_listen")
	e.restartHost()
	e.init("a", props)
	e.mustFlush("a", "app", c)
	e.exit("a")
	for coll, ids := range map[string][]string{"k_n0": {"r0", "r3"}, "k_n1": {"r1", "r4"}, "k_spill": {"r2", "r5"}} {
		count, _ := e.storedIDs(coll)
		checkOnce(t, count, ids...)
	}
	if docs := e.all("k_n2"); len(docs) != 0 {
		t.Errorf("k_n2 holds %d documents beyond target_limit", len(docs))
	}
}

// The targets that exist already count towards target_limit in a new
// process: a restart opens no more targets, and a chunk resent after it
// (here before the chunks the process before wrote ahead of it) goes
// where it went before, so a record sent to the overflow target is not
// written to its own target as well. In both modes, partitioned or not,
// with a collection or a database template.
func TestTargetsOverflowAcrossRestarts(t *testing.T) {
	for _, c := range []struct{ mode, partition, template string }{
		{"bucket", "none", "collection"}, {"flat", "none", "collection"}, {"bucket", "day", "collection"}, {"bucket", "none", "database"},
	} {
		t.Run(c.mode+"/"+c.partition+"/"+c.template, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			client := e.db.Client()
			at := time.Now().UTC().Truncate(time.Minute)
			chunk := func(name string, ids ...string) string {
				var recs [][]byte
				for i, id := range ids {
					recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"id", id}, kv{"ns", id[:1]}))
				}
				return chunkFile(t, t.TempDir(), name, recs...)
			}
			first, second, later := chunk("1", "a1", "b1"), chunk("2", "c1", "a2"), chunk("3", "d1", "b2")
			props := e.props("mode", c.mode, "collection", "k_$ns", "target_limit", "2", "target_overflow", "spill", "partition", c.partition)
			// where is the database and collection of target ns.
			where := func(ns string) (string, string) {
				suffix := ""
				if c.partition == "day" {
					suffix = at.Format("_20060102")
				}
				return e.dbName, "k_" + ns + suffix
			}
			if c.template == "database" {
				prefix, _, _ := strings.Cut(e.dbName, "_") // short enough for a database name to take a value
				props["database"], props["collection"] = prefix+"_$ns", "logs"
				where = func(ns string) (string, string) { return prefix + "_" + ns, "logs" }
				t.Cleanup(func() {
					for _, ns := range []string{"a", "b", "c", "d", "spill"} {
						db, _ := where(ns)
						_ = client.Database(db).Drop(context.Background())
					}
				})
			}
			e.init("a", props)
			e.mustFlush("a", "app", first)
			e.mustFlush("a", "app", second) // c1 beyond the limit
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", second) // resent first
			e.mustFlush("a", "app", later)  // d1: a new target, beyond the limit still
			e.exit("a")
			want := map[string][]string{"a": {"a1", "a2"}, "b": {"b1", "b2"}, "spill": {"c1", "d1"}}
			for ns, ids := range want {
				db, coll := where(ns)
				count, _ := (&env{t: t, db: client.Database(db)}).storedIDs(coll)
				checkOnce(t, count, ids...)
			}
			for _, ns := range []string{"c", "d"} {
				db, coll := where(ns)
				names, err := client.Database(db).ListCollectionNames(ctx, bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(names, coll) {
					t.Errorf("%s.%s created, beyond target_limit", db, coll)
				}
			}
		})
	}
}

// Every collection the template can give counts as an open target from
// the start, its dead-letter collections too; other collections do not.
func TestTargetsExistingCount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, n := range []string{"k_x", "k_x_dead", "audit", "k"} {
		if err := e.db.CreateCollection(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	c := chunkFile(t, t.TempDir(), "c",
		record(t, at, kv{"id", "x1"}, kv{"ns", "x"}), record(t, at.Add(time.Millisecond), kv{"id", "a1"}, kv{"ns", "a"}))
	e.init("a", e.props("collection", "k_$ns", "target_limit", "2", "target_overflow", "spill"))
	e.mustFlush("a", "app", c)
	e.exit("a")
	for coll, ids := range map[string][]string{"k_x": {"x1"}, "k_spill": {"a1"}} {
		count, _ := e.storedIDs(coll)
		checkOnce(t, count, ids...)
	}
	if !strings.Contains(e.host.Stderr(), "2 targets exist already") {
		t.Errorf("no line saying 2 targets exist already:\n%s", e.host.Stderr())
	}
}

// A record too big for a bucket is parked in the dead-letter collection of
// its target (a record that cannot be read names no field: the tag alone
// resolves it), the others stored in theirs.
func TestTargetsPoison(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	c := chunkFile(t, t.TempDir(), "c",
		record(t, at, kv{"id", "small"}, kv{"ns", "a"}),
		record(t, at.Add(time.Millisecond), kv{"id", "huge"}, kv{"ns", "a"}, kv{"msg", strings.Repeat("x", 80<<10)}))
	props := e.props("collection", "k_$ns", "bucket_max_bytes", "64K")
	e.init("a", props)
	e.mustFlush("a", "app", c)
	e.exit("a")
	count, _ := e.storedIDs("k_a")
	checkOnce(t, count, "small")
	dead := e.all("k_unknown_dead")
	if len(dead) != 1 {
		t.Fatalf("k_unknown_dead holds %d documents, want the huge record", len(dead))
	}
}

// templated is an in-process sink's options routing by the field ns.
func templated(t *testing.T, mode model.Mode) sink.Options {
	opt := sinkOptions(1000, 1<<20)
	opt.Mode = mode
	if mode == model.ModeFlat {
		opt.Grouper = bucketer.Config{}
	}
	db, err := naming.ParseDatabase("unused")
	if err != nil {
		t.Fatal(err)
	}
	coll, err := naming.Parse("k_$ns")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := naming.Parse("k_$['ns']_dead")
	if err != nil {
		t.Fatal(err)
	}
	opt.Targets = &sink.Targets{Target: naming.Pair{Database: db, Collection: coll}, DeadLetter: dead, Limit: 1000, Overflow: "other"}
	return opt
}

// A chunk of records for three targets whose write fails (applied with
// its reply lost, or lost and applied late, after the resend looked) is
// answered Retry; its resend stores each record once, in its target.
func TestTargetsRetried(t *testing.T) {
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	for i := range 30 {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"id", fmt.Sprintf("r%02d", i)}, kv{"ns", fmt.Sprintf("n%d", i%3)}))
	}
	chunk := join(recs)
	for _, mode := range []model.Mode{model.ModeBucket, model.ModeFlat} {
		for _, late := range []bool{false, true} {
			name := map[bool]string{false: "reply-lost", true: "late"}[late]
			t.Run(string(mode)+"/"+name, func(t *testing.T) {
				e := newDBEnv(t)
				fs := &faultStore{Store: e.store(), failAt: 2, err: errTimeout, apply: !late, late: late, down: true}
				s := e.newSink(templated(t, mode), fs, fs.retry())
				flushSink(t, s, "app", chunk, sink.Retry)
				fs.heal()
				flushSink(t, s, "app", chunk, sink.Done)
				for n := range 3 {
					var ids []string
					for i := n; i < 30; i += 3 {
						ids = append(ids, fmt.Sprintf("r%02d", i))
					}
					count, _ := e.storedIDs(fmt.Sprintf("k_n%d", n))
					checkOnce(t, count, ids...)
				}
			})
		}
	}
}

// A real Fluent Bit, when one is on PATH, tails the app log into one
// collection per module: every line lands exactly once, in the collection
// of its module, and each collection has its indexes.
func TestRealFluentBitTargets(t *testing.T) {
	e := newEnv(t)
	out := fluentBit(t, "", `[OUTPUT]
    Name        mongodb
    Match       app.*
    Workers     2
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  $TAG[0]_$module
    write_batch 20
`, nil)
	var all []bson.Raw
	for _, m := range []string{"gateway", "order", "payment", "search", "user"} {
		coll := "app_" + m
		entries := checkBuckets(t, e.all(coll), defaultLimits)
		for _, en := range entries {
			if got := en.Lookup("module").StringValue(); got != m {
				t.Fatalf("%s holds a record of module %q", coll, got)
			}
		}
		if len(indexKeys(t, e.db, coll)) == 0 {
			t.Errorf("%s has no index but _id", coll)
		}
		all = append(all, entries...)
	}
	checkSeqs(t, all, 5000)
	if t.Failed() {
		t.Logf("fluent-bit output:\n%s", out)
	}
}

// edgeLog writes a log of JSON lines, tag edge.log in the config that
// reads it, for the namespace cases and then n more distinct namespaces
// (extra-<i>): two lines a case, ids e<case>-0 and -1. An invalid UTF-8
// value is written as its raw bytes.
func edgeLog(t *testing.T, dir string, cases []nsCase, n int) (path string, ids []string) {
	t.Helper()
	var b strings.Builder
	line := func(id string, v any) {
		fmt.Fprintf(&b, `{"ts":"2026-12-04T10:00:00.000Z","id":%q,"msg":"edge"`, id)
		switch s, isString := v.(string); {
		case v == nil:
		case isString && !utf8.ValidString(s):
			b.WriteString(`,"kubernetes":{"namespace_name":"` + s + `"}`)
		default:
			if d, ok := v.(bson.D); ok {
				m := map[string]any{}
				for _, el := range d {
					m[el.Key] = el.Value
				}
				v = m
			}
			js, err := json.Marshal(map[string]any{"namespace_name": v})
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(`,"kubernetes":` + string(js))
		}
		b.WriteString("}\n")
		ids = append(ids, id)
	}
	for i, c := range cases {
		line(fmt.Sprintf("e%d-0", i), c.value)
		line(fmt.Sprintf("e%d-1", i), c.value)
	}
	for i := range n {
		line(fmt.Sprintf("x%d", i), fmt.Sprintf("extra-%d", i))
	}
	path = filepath.Join(dir, "edge.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

// A real Fluent Bit, when one is on PATH, tails two logs of two tags
// through three templated outputs. The app log goes to a collection per
// module, in buckets. The edge log, of hostile and missing namespace
// values and 20 more namespaces, goes to a database per tag and a
// collection per namespace (flat, one document per line): each line once,
// in the collection its value names, a line without the field in
// k8s_unknown, every collection with the same indexes. The same edge log
// with target_limit 3 (buckets) fills 3 targets and sends every other line
// to k8s_other, once, and the plugin says so.
func TestRealFluentBitTargetsEdges(t *testing.T) {
	e := newEnv(t)
	client := e.db.Client()
	edgeDB, overDB := e.dbName+"_edge", e.dbName+"_o"
	t.Cleanup(func() {
		for _, d := range []string{edgeDB, overDB} {
			_ = client.Database(d).Drop(context.Background())
		}
	})
	cases := nsCases(t, edgeDB)
	path, ids := edgeLog(t, t.TempDir(), cases, 20)
	out := fluentBit(t, "", `[INPUT]
    Name           tail
    Path           `+path+`
    Tag            edge.log
    Parser         app_json
    Read_From_Head On

[OUTPUT]
    Name        mongodb
    Match       app.*
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  $TAG[0]_$module
    write_batch 20

[OUTPUT]
    Name        mongodb
    Match       edge.*
    uri         `+e.srv.URI+`
    database    `+e.dbName+`_$TAG[0]
    collection  k8s_$kubernetes['namespace_name']
    mode        flat

[OUTPUT]
    Name         mongodb
    Match        edge.*
    uri          `+e.srv.URI+`
    database     `+overDB+`
    collection   k8s_$kubernetes['namespace_name']
    target_limit 3
    write_batch  20
`, nil)
	defer func() {
		if t.Failed() {
			t.Logf("fluent-bit output:\n%s", out)
		}
	}()
	var entries []bson.Raw
	for _, m := range []string{"gateway", "order", "payment", "search", "user"} {
		entries = append(entries, checkBuckets(t, e.all("app_"+m), defaultLimits)...)
	}
	checkSeqs(t, entries, 5000)

	// The edge log, every target open.
	edge := &env{t: t, db: client.Database(edgeDB)}
	where := storedIn(t, edge, ids)
	for i, c := range cases {
		for _, id := range []string{fmt.Sprintf("e%d-0", i), fmt.Sprintf("e%d-1", i)} {
			want := []string{c.coll}
			if s, ok := c.value.(string); ok && !utf8.ValidString(s) {
				want = append(want, "k8s_unknown") // Fluent Bit may have dropped the bytes
			}
			if !slices.Contains(want, where[id]) {
				t.Errorf("namespace %q: line %s stored in %q, want %v", c.value, id, where[id], want)
			}
		}
	}
	for i := range 20 {
		if id := fmt.Sprintf("x%d", i); where[id] != fmt.Sprintf("k8s_extra-%d", i) {
			t.Errorf("line %s stored in %q, want k8s_extra-%d", id, where[id], i)
		}
	}
	names, err := edge.db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	want := indexKeys(t, edge.db, "k8s_default")
	if len(want) == 0 {
		t.Error("k8s_default has no index but _id")
	}
	for _, n := range names {
		if got := indexKeys(t, edge.db, n); !slices.Equal(got, want) {
			t.Errorf("%s has indexes %v, k8s_default %v", n, got, want)
		}
	}

	// The same log past target_limit 3.
	over := &env{t: t, db: client.Database(overDB)}
	at := storedIn(t, over, ids)
	own, other := map[string]bool{}, 0 // the targets open, lines in k8s_other
	for _, c := range at {
		if c == "k8s_other" {
			other++
		} else {
			own[c] = true
		}
	}
	if len(own) != 3 || other == 0 {
		t.Errorf("target_limit 3: own targets %v and %d lines in k8s_other, want 3 targets and the rest in k8s_other", own, other)
	}
	for id, c := range where {
		switch o := at[id]; {
		case own[c] && o != c:
			t.Errorf("line %s is in %s, though its target %s is open", id, o, c)
		case !own[c] && o != "k8s_other":
			t.Errorf("line %s is in %s, want k8s_other (its target %s is beyond target_limit)", id, o, c)
		}
	}
	if !strings.Contains(out, "records went to an overflow target") {
		t.Error("no warning of records sent to the overflow target")
	}
}

// storedIn is where each of ids is stored in e's database (bucket entries
// or flat documents, by their id field), each required once.
func storedIn(t *testing.T, e *env, ids []string) map[string]string {
	t.Helper()
	names, err := e.db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]string{}
	count := map[string]int{}
	for _, n := range names {
		if !strings.HasPrefix(n, "k8s_") || strings.ContainsFunc(n[4:], func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-')
		}) {
			t.Errorf("%s holds a collection named %q", e.db.Name(), n)
		}
		c, _ := e.storedBy(n, "id")
		for id, k := range c {
			count[id] += k
			where[id] = n
		}
	}
	checkOnce(t, count, ids...)
	return where
}

// A record whose database would be one of MongoDB's own (admin, local,
// config, in any case), from a field or from the tag, is stored in the
// overflow target instead, and the plugin says why: nothing is written
// to admin, local or config.
func TestTargetsReservedDatabase(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	client := e.db.Client()
	sfx := strings.ToLower(strconv.FormatInt(time.Now().UnixNano()%1e12, 36))
	spill, coll, fromTag := "spill_"+sfx, "x_"+sfx, "fromtag_"+sfx
	t.Cleanup(func() { _ = client.Database(spill).Drop(context.Background()) })
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	for i, db := range []string{"admin", "local", "config", "ADMIN"} {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"id", "r" + db}, kv{"db", db}))
	}
	dir := t.TempDir()
	e.init("a", e.props("database", "$db", "collection", coll, "target_overflow", spill, "mode", "flat"))
	e.init("b", e.props("database", "$TAG", "collection", fromTag, "target_overflow", spill, "mode", "flat"))
	e.mustFlush("a", "app", chunkFile(t, dir, "c", recs...))
	if want := "4 records went to an overflow target since the last report (" + spill + "." + coll + "): their own database would be admin, local, config, which MongoDB keeps for itself"; !waitLog(e.host, want) {
		t.Errorf("no warning %q:\n%s", want, e.host.Stderr())
	}
	e.mustFlush("b", "ADMIN", chunkFile(t, dir, "t", record(t, at, kv{"id", "tag"})))
	e.exit("a")
	e.exit("b")

	sub := &env{t: t, srv: e.srv, db: client.Database(spill), dbName: spill}
	count, _ := sub.storedIDs(coll)
	checkOnce(t, count, "radmin", "rlocal", "rconfig", "rADMIN")
	count, _ = sub.storedIDs(fromTag)
	checkOnce(t, count, "tag")
	for _, db := range []string{"admin", "local", "config"} {
		names, err := client.Database(db).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, sfx) {
				t.Errorf("%s.%s was written", db, n)
			}
		}
	}
}
