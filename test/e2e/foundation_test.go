package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// The 5000-record app-log chunk lands as bounded buckets holding every
// record exactly once, with its fields typed as they came.
func TestAppChunkIntoBuckets(t *testing.T) {
	e := newEnv(t)
	e.init("a", e.props())
	e.mustFlush("a", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.exit("a")

	docs := e.all("logs")
	entries := checkBuckets(t, docs, defaultLimits)
	if len(entries) != 5000 {
		t.Fatalf("%d entries stored, want 5000", len(entries))
	}
	checkSeqs(t, entries, 5000)
	for _, d := range docs {
		if tag := d.Lookup("key", "tag").StringValue(); tag != "app.log" {
			t.Errorf("bucket key tag %q, want app.log", tag)
		}
	}
	first := entries[0]
	for _, f := range []string{"level", "module", "traceId", "msg"} {
		if typ := first.Lookup(f).Type; typ != bson.TypeString {
			t.Errorf("entry field %s stored as %v, want string", f, typ)
		}
	}
	if typ := first.Lookup("cost").Type; typ != bson.TypeInt32 && typ != bson.TypeInt64 {
		t.Errorf("cost stored as %v, want an integer", typ)
	}
	// 5000 records 29 ms apart span 3 one-minute windows: 2069 and 2069
	// records fill 3 buckets each (1000, 1000, 69), the rest one or two.
	if len(docs) < 6 || len(docs) > 8 {
		t.Errorf("%d buckets, want 6 to 8", len(docs))
	}
}

// A bad uri fails Init with a message naming the key, so Fluent Bit
// refuses to start.
func TestBadURIFailsInit(t *testing.T) {
	h := startHost(t)
	rc, err := h.Init("bad", map[string]string{"uri": "http://localhost:27017"})
	if err != nil {
		t.Fatal(err)
	}
	if rc != harness.FLBError {
		t.Fatalf("init rc %d, want FLB_ERROR", rc)
	}
	if !waitLog(h, `uri: invalid value "http://localhost:27017"`) {
		t.Errorf("log does not name the key and value:\n%s", h.Stderr())
	}
}

// The README's document model lists a bucket's fields in the order MongoDB
// 5.0+ stores them: the fields of the creating upsert's filter, then those
// its update operators add, in lexicographic order. The one other order a
// real server gives is the operators' own (FerretDB v2 on DocumentDB):
// each operator's fields in the order the update names them. A stored
// bucket holds one of the two, and no other.
func TestReadmeDocumentModel(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := string(readme)
	start := strings.Index(block, "```js\n{\n")
	if start < 0 {
		t.Fatal("no document model in the README")
	}
	block = block[start:]
	block = block[:strings.Index(block, "\n}\n```")]
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^  (\w+):`).FindAllStringSubmatch(block, -1) {
		want = append(want, m[1])
	}
	e := newDBEnv(t)
	in, cmds, log := monitored(t, e, "stats", "cost", "count_by", "level", "ttl", "7d")
	mustDone(t, in.Flush("app.log", readFixture(t, "chunk-app-json-5000.msgpack")), log)
	in.Exit()
	docs := e.all("logs")
	if len(docs) == 0 {
		t.Fatal("no buckets")
	}
	elems, err := docs[0].Elements()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, el := range elems {
		got = append(got, el.Key())
	}
	lexical, operators := upsertOrders(t, cmds.since(0), docs[0].Lookup("_id"))
	if strings.Join(want, ",") != strings.Join(lexical, ",") {
		t.Errorf("README lists the bucket fields\n  %v\nMongoDB 5.0+ stores them as\n  %v", want, lexical)
	}
	if g := strings.Join(got, ","); g != strings.Join(lexical, ",") && g != strings.Join(operators, ",") {
		t.Errorf("stored bucket fields:\n  %v\nwant MongoDB 5.0+'s order (the README's)\n  %v\nor the update operators' order\n  %v", got, lexical, operators)
	}
}

// upsertOrders are the top-level field orders of the bucket with _id id
// after the upsert that created it (the first update statement naming it):
// the filter's fields, then the fields the update adds, sorted by name
// (lexical) or as its operators name them (operators).
func upsertOrders(t *testing.T, sent []sentCommand, id bson.RawValue) (lexical, operators []string) {
	t.Helper()
	var stmt bson.Raw
	for _, c := range named(sent, "update") {
		for _, st := range statements(t, c) {
			if stmt == nil && st.Lookup("q", "_id").Equal(id) {
				stmt = st
			}
		}
	}
	if stmt == nil {
		t.Fatalf("no update statement for bucket %v", id)
	}
	seen := map[string]bool{}
	var filter, added []string
	top := func(path string, into *[]string) {
		if name, _, _ := strings.Cut(path, "."); !seen[name] {
			seen[name] = true
			*into = append(*into, name)
		}
	}
	q, _ := stmt.Lookup("q").Document().Elements()
	for _, el := range q {
		// Only the filter's equalities are inserted ({sealed: {$exists:
		// false}} is not one).
		if d, ok := el.Value().DocumentOK(); ok {
			if first, err := d.IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
				continue
			}
		}
		top(el.Key(), &filter)
	}
	ops, _ := stmt.Lookup("u").Document().Elements()
	for _, op := range ops {
		fields, _ := op.Value().Document().Elements()
		for _, el := range fields {
			top(el.Key(), &added)
		}
	}
	operators = append(append([]string(nil), filter...), added...)
	slices.Sort(added)
	return append(filter, added...), operators
}
