package bucketer

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

var t0 = time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)

// rec builds a record at t0+ms with the given document.
func rec(i int, ms int, doc *bsoncore.DocumentBuilder) parser.Record {
	ts := t0.Add(time.Duration(ms) * time.Millisecond)
	return parser.Record{Index: i, Time: ts, Doc: doc.Build()}
}

func appDoc(module, level string, cost int32) *bsoncore.DocumentBuilder {
	return bsoncore.NewDocumentBuilder().AppendString("module", module).AppendString("level", level).
		AppendInt32("cost", cost).AppendDocument("k8s", bsoncore.NewDocumentBuilder().AppendString("pod", "p-"+module).Build())
}

func TestGroupByKeyAndWindow(t *testing.T) {
	c := &Config{KeyPaths: []string{"module", "k8s.pod", "missing", "k8s.ns.name"}, TagKey: "tag", Window: time.Minute, ReplaceDot: "_"}
	recs := []parser.Record{
		rec(0, 0, appDoc("pay", "info", 1)),
		rec(1, 10, appDoc("auth", "info", 2)),
		rec(2, 59_999, appDoc("pay", "error", 3)),
		rec(3, 60_000, appDoc("pay", "info", 4)), // next window
	}
	groups := c.Group("app", recs)
	if len(groups) != 3 {
		t.Fatalf("%d groups, want 3", len(groups))
	}
	g := groups[0]
	if len(g.Records) != 2 || g.Records[0].Index != 0 || g.Records[1].Index != 2 {
		t.Errorf("first group holds %d records", len(g.Records))
	}
	if !g.Start.Equal(t0) || !g.End.Equal(t0.Add(time.Minute)) {
		t.Errorf("window %v-%v", g.Start, g.End)
	}
	// A dotted path is stored as the nested fields it names, paths
	// sharing a first segment in one document.
	want := `{"module": "pay","k8s": {"pod": "p-pay","ns": {"name": null}},"missing": null}`
	if got := g.Key.String(); got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	var fields []string
	c.KeyFields(g.Key, func(path string, v bsoncore.Value) { fields = append(fields, path+"="+v.String()) })
	if got, want := strings.Join(fields, " "), `module="pay" k8s.pod="p-pay" missing=null k8s.ns.name=null`; got != want {
		t.Errorf("KeyFields: %s, want %s", got, want)
	}
	if groups[2].ID == g.ID || groups[1].ID == g.ID {
		t.Errorf("group ids are not distinct: %s %s %s", g.ID, groups[1].ID, groups[2].ID)
	}
	// Deterministic: the same records give the same ids.
	if again := c.Group("other-tag", recs); again[0].ID != g.ID {
		t.Errorf("id changed between calls: %s, %s", again[0].ID, g.ID)
	}
}

func TestGroupByTagWithoutWindow(t *testing.T) {
	c := &Config{TagKey: "tag"}
	recs := []parser.Record{rec(0, 0, appDoc("a", "info", 1)), rec(1, 3_600_000, appDoc("b", "info", 1))}
	groups := c.Group("app.log", recs)
	if len(groups) != 1 || !groups[0].Start.IsZero() {
		t.Fatalf("want one group without a window, got %d", len(groups))
	}
	if got := groups[0].Key.String(); got != `{"tag": "app.log"}` {
		t.Errorf("key %s", got)
	}
	if c.Group("web", recs)[0].ID == groups[0].ID {
		t.Errorf("different tags share a group id")
	}
}

func TestSummarize(t *testing.T) {
	c := &Config{Stats: []string{"cost", "missing"}, CountBy: []string{"level", "k8s.pod"}, ReplaceDot: "_"}
	recs := []parser.Record{
		rec(0, 5, appDoc("pay", "info", 7)),
		rec(1, 1, appDoc("pay", "error", -2)),
		rec(2, 9, bsoncore.NewDocumentBuilder().AppendString("level", "a.b").AppendDouble("cost", 0.5)),
	}
	var ptrs []*parser.Record
	for i := range recs {
		ptrs = append(ptrs, &recs[i])
	}
	s := c.Summarize(ptrs)
	if s.Records != 3 || !s.MinTs.Equal(recs[1].Time) || !s.MaxTs.Equal(recs[2].Time) {
		t.Errorf("records %d, min %v, max %v", s.Records, s.MinTs, s.MaxTs)
	}
	if len(s.Stats) != 1 {
		t.Fatalf("stats %+v: a field with no numbers gets none", s.Stats)
	}
	if st := s.Stats[0]; st.Field != "cost" || st.N != 3 || st.Min != -2 || st.Max != 7 || st.Sum != 5.5 || !st.Float {
		t.Errorf("stats %+v", st)
	}
	want := map[[2]string]int{{"level", "info"}: 1, {"level", "error"}: 1, {"level", "a_b"}: 1,
		{"k8s.pod", "p-pay"}: 2, {"k8s.pod", "null"}: 1}
	if len(s.Counts) != len(want) {
		t.Fatalf("counts %+v", s.Counts)
	}
	for _, ct := range s.Counts {
		if want[[2]string{ct.Field, ct.Value}] != ct.N {
			t.Errorf("count %+v, want %d", ct, want[[2]string{ct.Field, ct.Value}])
		}
	}
	if s.Bytes != EntryBytes(ptrs[0])+EntryBytes(ptrs[1])+EntryBytes(ptrs[2]) {
		t.Errorf("bytes %d", s.Bytes)
	}
}

func TestFit(t *testing.T) {
	var ptrs []*parser.Record
	for i := 0; i < 10; i++ {
		r := rec(i, i, appDoc("m", "info", 1))
		ptrs = append(ptrs, &r)
	}
	size := EntryBytes(ptrs[0])
	for _, c := range []struct{ room, roomBytes, extra, want int }{
		{10, 1 << 20, 0, 10},
		{4, 1 << 20, 0, 4},
		{10, 3 * size, 0, 3},
		{10, 3*size + size - 1, 0, 3},
		{10, 3 * (size + 10), 10, 3},
		{0, 1 << 20, 0, 0},
		{10, size - 1, 0, 0},
	} {
		if got := Fit(ptrs, c.room, c.roomBytes, c.extra); got != c.want {
			t.Errorf("Fit(room %d, bytes %d, extra %d) = %d, want %d", c.room, c.roomBytes, c.extra, got, c.want)
		}
	}
}

// A counted value is escaped as a record's field name is, and a long one is
// cut at a character boundary, never inside a character.
func TestCountedValueNames(t *testing.T) {
	c := &Config{CountBy: []string{"msg"}, ReplaceDot: "_", ReplaceDollar: "_"}
	long := strings.Repeat("a", 127) + "é" + "tail" // é's two bytes straddle byte 128
	for _, tc := range []struct{ value, want string }{
		{"$set.x", "_set_x"},
		{"", "_empty"},
		{"a\x00b", "a_b"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{long, strings.Repeat("a", 127)},
	} {
		r := rec(0, 0, bsoncore.NewDocumentBuilder().AppendString("msg", tc.value))
		s := c.Summarize([]*parser.Record{&r})
		if len(s.Counts) != 1 || s.Counts[0].Value != tc.want {
			t.Errorf("value %q: counts %+v, want %q", tc.value, s.Counts, tc.want)
		}
		if got := model.SafeName(tc.value, "_", "_"); tc.value != long && got != tc.want {
			t.Errorf("model.SafeName(%q) = %q, want %q", tc.value, got, tc.want)
		}
	}
}
