package e2e

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// nested is a map nested depth levels deep.
func nested(depth int) any {
	var v any = "bottom"
	for i := 0; i < depth; i++ {
		v = map[string]any{"d": v}
	}
	return v
}

// Bad input through the real .so: nothing is lost silently and nothing
// crashes. A 20 MB record and a record nested 100 levels deep are parked
// with their reason while the rest of the chunk is stored; unsafe field
// names are rewritten; invalid UTF-8 becomes valid UTF-8; a chunk cut off
// in the middle stores the records before the cut and parks the rest.
func TestBucketBadInput(t *testing.T) {
	ts := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	rec := func(i int, body ...kv) []byte {
		return record(t, ts.Add(time.Duration(i)*time.Millisecond), append([]kv{{"seq", i}}, body...)...)
	}
	huge := strings.Repeat("x", 20<<20)
	chunk := join([][]byte{
		rec(0, kv{"msg", "ok"}),
		rec(1, kv{"msg", huge}),
		rec(2, kv{"a.b", 1}, kv{"$x", 2}, kv{"", 3}, kv{"nul\x00key", 4}, kv{"m", map[string]any{"c.d": 5, "$e": 6}}),
		rec(3, kv{"msg", "bad \xff\xfe utf8"}, kv{"k\xffey", "v"}),
		rec(4, kv{"deep", nested(100)}),
		rec(5, kv{"msg", "last"}),
	})
	e := newEnv(t)
	pm := e.props()
	e.init("a", pm)
	path := writeFile(t, "bad.msgpack", chunk)
	e.mustFlush("a", "app.log", path)
	e.resendInNewProcess("a", pm, "app.log", path) // still once

	// A chunk cut in the middle of its third record.
	good := join([][]byte{rec(10, kv{"msg", "before"}), rec(11, kv{"msg", "before"})})
	cut := append(good, rec(12, kv{"msg", "cut off here"})[:10]...)
	e.mustFlush("a", "cut.log", writeFile(t, "cut.msgpack", cut))
	e.exit("a")

	entries := checkBuckets(t, e.all("logs"), defaultLimits)
	bySeq := map[int64]bson.Raw{}
	for _, en := range entries {
		s := en.Lookup("seq").AsInt64()
		if bySeq[s] != nil {
			t.Errorf("seq %d stored twice", s)
		}
		bySeq[s] = en
	}
	for _, s := range []int64{0, 2, 3, 5, 10, 11} {
		if bySeq[s] == nil {
			t.Errorf("record %d not stored", s)
		}
	}
	if len(bySeq) != 6 {
		t.Errorf("%d records stored, want 6", len(bySeq))
	}
	if r := bySeq[2]; r != nil {
		for _, f := range []string{"a_b", "_x", "_empty", "nul_key"} {
			if _, err := r.LookupErr(f); err != nil {
				t.Errorf("field %q not stored under its rewritten name: %v", f, r)
			}
		}
		if _, err := r.LookupErr("m", "c_d"); err != nil {
			t.Errorf("nested field c.d not rewritten: %v", r)
		}
		if _, err := r.LookupErr("m", "_e"); err != nil {
			t.Errorf("nested field $e not rewritten: %v", r)
		}
	}
	if r := bySeq[3]; r != nil {
		msg := r.Lookup("msg").StringValue()
		if !utf8.ValidString(msg) || !strings.HasPrefix(msg, "bad ") || !strings.HasSuffix(msg, " utf8") {
			t.Errorf("msg %q is not the value as valid UTF-8", msg)
		}
		elems, _ := r.Elements()
		for _, el := range elems {
			if !utf8.ValidString(el.Key()) {
				t.Errorf("field name %q is not valid UTF-8", el.Key())
			}
		}
	}

	dead := e.all("logs_dead")
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[d.Lookup("_id").StringValue()] = d.Lookup("reason").StringValue()
		if d.Lookup("raw").Type != bson.TypeBinary {
			t.Errorf("parked record without its raw bytes: %v", d.Lookup("_id"))
		}
	}
	if len(dead) != 3 {
		t.Errorf("%d parked records, want 3 (huge, deep, the cut-off rest): %v", len(dead), reasons)
	}
	want := []struct{ id, reason string }{{":1", "exceeds"}, {":4", "nested deeper"}, {":corrupt@", "corrupt chunk"}}
	for _, w := range want {
		found := false
		for id, reason := range reasons {
			if strings.Contains(id, w.id) && strings.Contains(reason, w.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("no parked record %s with a reason about %q: %v", w.id, w.reason, reasons)
		}
	}
}
