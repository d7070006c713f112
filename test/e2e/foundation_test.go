package e2e

import (
	"os"
	"regexp"
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

// The README's document model lists a bucket's fields as they are stored:
// the same names in the same order.
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
	e := newEnv(t)
	e.init("a", e.props("stats", "cost", "count_by", "level", "ttl", "7d"))
	e.mustFlush("a", "app.log", fixture("chunk-app-json-5000.msgpack"))
	e.exit("a")
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
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("stored bucket fields:\n  %v\nREADME lists:\n  %v", got, want)
	}
}
