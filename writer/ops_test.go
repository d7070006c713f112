package writer

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// entry is a small entry document with the given id.
func entry(id string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("id", id).AppendString("msg", "m").Build()
}

// write is one write of a bucket built by bucketOf.
type write struct {
	tag uint32
	ids []string
}

// bucketOf builds a bucket holding the writes in order, with their ops as
// the writer pushes them.
func bucketOf(writes ...write) bson.Raw {
	logs, ops := bsoncore.NewArrayBuilder(), []byte(nil)
	at, ops := bsoncore.ReserveLength(ops)
	n, k := 0, 0
	for _, w := range writes {
		for _, id := range w.ids {
			logs.AppendDocument(entry(id))
			n++
		}
		for left := len(w.ids); left > 0; left -= opMaxN {
			ops = bsoncore.AppendInt32Element(ops, strconv.Itoa(k), opValue(w.tag, min(left, opMaxN)))
			k++
		}
	}
	ops = append(ops, 0)
	ops = bsoncore.UpdateLength(ops, at, int32(len(ops))-at)
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("count", int32(n)).
		AppendArray("ops", ops).AppendArray("logs", logs.Build()).Build())
}

func records(ids ...string) []*parser.Record {
	out := make([]*parser.Record, len(ids))
	for i, id := range ids {
		out[i] = &parser.Record{Index: i, Time: time.Unix(0, 0), Doc: entry(id)}
	}
	return out
}

func ids(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// An op element packs the tag and the entry count and unpacks to them, for
// tags whose int32 is negative too; a write pushes ceil(n/15) elements.
func TestOpElements(t *testing.T) {
	for _, tag := range []uint32{0, 1, 0x7ffffff, 0x8000000, 0xfffffff} {
		for _, n := range []int{1, 7, opMaxN} {
			if gt, gn := opParts(opValue(tag, n)); gt != tag || gn != n {
				t.Errorf("opParts(opValue(%#x, %d)) = %#x, %d", tag, n, gt, gn)
			}
		}
	}
	for n, want := range map[int]int{1: 1, 15: 1, 16: 2, 1000: 67} {
		if got := opCount(n); got != want {
			t.Errorf("opCount(%d) = %d, want %d", n, got, want)
		}
	}
	if a, b := ChunkTag("0123456789abcdef01234567"), ChunkTag("0123456f89abcdef01234567"); a != 0x0123456 || a != b {
		t.Errorf("ChunkTag: %#x and %#x, want the first seven hex digits 0x0123456 for both", a, b)
	}
	vals, _ := bsoncore.Document(tagFilter(0xfffffff)).Lookup("$in").Array().Values()
	if len(vals) != opMaxN || vals[0].Int32() != opValue(0xfffffff, 1) || vals[opMaxN-1].Int32() != opValue(0xfffffff, opMaxN) {
		t.Errorf("tagFilter: %v", vals)
	}
}

// A bucket's entries are attributed to its writes by position, a write of
// more than 15 entries across several op elements.
func TestRuns(t *testing.T) {
	d := bucketOf(write{1, ids(3, "a")}, write{2, ids(20, "b")}, write{1, ids(1, "c")})
	var got []int
	for _, r := range runs(d) {
		got = append(got, int(r.tag), r.at, len(r.entries))
	}
	want := []int{1, 0, 3, 2, 3, 15, 2, 18, 5, 1, 23, 1}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v", got, want)
		}
	}
	// A bucket whose ops claim more entries than it has yields the whole runs.
	short := bson.Raw(bsoncore.NewDocumentBuilder().AppendArray("ops", bsoncore.NewArrayBuilder().
		AppendInt32(opValue(1, 2)).AppendInt32(opValue(1, 5)).Build()).
		AppendArray("logs", bsoncore.NewArrayBuilder().AppendDocument(entry("x")).AppendDocument(entry("y")).
			AppendDocument(entry("z")).Build()).Build())
	if rs := runs(short); len(rs) != 1 || len(rs[0].entries) != 2 {
		t.Errorf("runs of an inconsistent bucket: %v", rs)
	}
}

// Entries count as a chunk's only when every entry of an op element is one
// of its records: a tag shared by chance claims nothing, identical records
// are claimed once each.
func TestMatcherClaims(t *testing.T) {
	recs := records("a", "b", "b", "c")
	m := newMatcher(recs, nil)
	d := bucketOf(write{7, []string{"a", "b"}}, write{7, []string{"b", "x"}}, write{7, []string{"b"}}, write{7, []string{"b"}})
	var claimed []int
	for _, r := range runs(d) {
		claimed = append(claimed, m.claim(r)...)
	}
	// a, b: claimed; b, x: x is not ours, nothing; b: the second b; b: none left.
	want := []int{0, 1, 2}
	if len(claimed) != len(want) {
		t.Fatalf("claimed %v, want %v", claimed, want)
	}
	for i := range want {
		if claimed[i] != want[i] {
			t.Fatalf("claimed %v, want %v", claimed, want)
		}
	}
}

// A record parked after its writes were fenced off has no entry: an entry
// of its bytes is another record's, even the later one of two identical.
func TestMatcherSkipsParked(t *testing.T) {
	recs := records("a", "b", "b")
	m := newMatcher(recs, map[int]bool{recs[1].Index: true})
	d := bucketOf(write{7, []string{"b"}}, write{7, []string{"b"}})
	var claimed []int
	for _, r := range runs(d) {
		claimed = append(claimed, m.claim(r)...)
	}
	if len(claimed) != 1 || claimed[0] != 2 {
		t.Fatalf("claimed %v, want [2]: the first b is parked", claimed)
	}
}

// appliedAt finds how much of a write whose outcome was unknown the bucket
// holds at its position: all of it, a prefix (a larger earlier attempt was
// cut in halves after), or nothing when the position holds another
// chunk's write or other entries; it stops at a position accounted for
// (another write's, whatever its entries).
func TestAppliedAt(t *testing.T) {
	recs := records(ids(20, "r")...)
	before := write{9, []string{"x", "y"}}
	same := []string{"h", "h", "h", "h"}
	cases := []struct {
		name  string
		d     bson.Raw
		tag   uint32
		want  int
		taken []int // positions accounted for
	}{
		{"whole write", bucketOf(before, write{5, ids(20, "r")}), 5, 20, nil},
		{"a prefix", bucketOf(before, write{5, ids(16, "r")}), 5, 16, nil},
		{"two writes", bucketOf(before, write{5, ids(4, "r")}, write{5, ids(20, "r")[4:]}), 5, 20, nil},
		{"another tag", bucketOf(before, write{6, ids(20, "r")}), 5, 0, nil},
		{"same tag, other entries", bucketOf(before, write{5, ids(20, "s")}), 5, 0, nil},
		{"not at the position", bucketOf(write{5, ids(20, "r")}), 5, 0, nil},
		{"nothing there", bucketOf(before), 5, 0, nil},
		{"the next write accounted for", bucketOf(before, write{5, ids(4, "r")}, write{5, ids(20, "r")[4:]}), 5, 4, []int{6}},
		{"identical records, the second write accounted for", bucketOf(before, write{5, same[:2]}, write{5, same[:2]}), 5, 2, []int{4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := 2
			rs := recs
			if c.name[0] == 'i' {
				rs = records(same...)
			}
			taken := func(p int) bool { return slices.Contains(c.taken, p) }
			if got := appliedAt(c.d, at, c.tag, rs, taken); got != c.want {
				t.Errorf("appliedAt = %d, want %d", got, c.want)
			}
			if wantTag := c.want > 0; tagAt(c.d, at, c.tag) != wantTag && c.name != "same tag, other entries" {
				t.Errorf("tagAt = %v, want %v", !wantTag, wantTag)
			}
		})
	}
}
