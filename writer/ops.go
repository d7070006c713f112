package writer

import (
	"bytes"
	"encoding/hex"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// A bucket's ops array records its writes in the order they were applied:
// int32 elements, each with the writing chunk's 28-bit tag in the high bits
// and a number of entries (1 to opMaxN) in the low 4; a write of n entries
// pushes ceil(n/opMaxN) of them. The entries of the i-th element are
// therefore the logs that follow the entries of the elements before it, so
// a reader can tell which entries each write pushed. The tag only narrows
// the search: whether entries are a chunk's own is decided by comparing
// them with the chunk's records, byte for byte, so a tag shared by chance
// never hides a record. The 15 values of one tag are matched with $in,
// which every MongoDB-compatible server evaluates per element (a range
// inside $elemMatch is not evaluated so by some).
const opMaxN = 15

// opElemBytes is the most one op element takes in a bucket: type, an array
// index of up to 6 digits and its NUL, the int32.
const opElemBytes = 1 + 7 + 4

// ChunkTag is the 28-bit tag of a chunk id (hex, as sink.ChunkID makes
// it): its first seven hex digits.
func ChunkTag(chunkID string) uint32 {
	var b [4]byte
	h := []byte(chunkID + "00000000")[:8]
	if _, err := hex.Decode(b[:], h); err != nil {
		copy(b[:], chunkID)
	}
	return (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) >> 4
}

func opValue(tag uint32, n int) int32 { return int32(tag<<4 | uint32(n)) }

func opParts(v int32) (tag uint32, n int) { return uint32(v) >> 4, int(uint32(v) & 0xf) }

// opCount is how many op elements a write of n entries pushes.
func opCount(n int) int { return (n + opMaxN - 1) / opMaxN }

// opsBytes is what the op elements of a write of n entries add to a bucket.
func opsBytes(n int) int { return opCount(n) * opElemBytes }

// appendOps appends the op elements of a write of n entries by tag to an
// array being built, numbering them from 0.
func appendOps(dst []byte, tag uint32, n int) []byte {
	for i := 0; n > 0; i++ {
		k := min(n, opMaxN)
		dst = bsoncore.AppendInt32Element(dst, strconv.Itoa(i), opValue(tag, k))
		n -= k
	}
	return dst
}

// tagFilter is the filter value matching an ops element of tag.
func tagFilter(tag uint32) bsoncore.Document {
	vals := bsoncore.NewArrayBuilder()
	for n := 1; n <= opMaxN; n++ {
		vals.AppendInt32(opValue(tag, n))
	}
	return bsoncore.NewDocumentBuilder().AppendArray("$in", vals.Build()).Build()
}

// opElems calls f with each op element of bucket d, in order: the
// position of its first entry, its tag and its number of entries; it stops
// when f returns false.
func opElems(d bson.Raw, f func(at int, tag uint32, n int) bool) {
	pos := 0
	ops, _ := d.Lookup(model.Ops).ArrayOK()
	vals, _ := ops.Values()
	for _, v := range vals {
		i, ok := v.Int32OK()
		if !ok {
			continue
		}
		t, n := opParts(i)
		if !f(pos, t, n) {
			return
		}
		pos += n
	}
}

// tagAt reports whether bucket d holds an op element of tag whose entries
// start at position at.
func tagAt(d bson.Raw, at int, tag uint32) bool {
	found := false
	opElems(d, func(pos int, t uint32, n int) bool {
		if pos == at {
			found = t == tag
			return false
		}
		return pos+n <= at
	})
	return found
}

// run is the entries one op element of a bucket pushed.
type run struct {
	tag     uint32
	at      int // position of the first entry in logs
	entries []bson.RawValue
}

// OpRun is the entries one op element of a bucket records: pushed by a
// write of the chunk whose tag is Tag, from position At of logs on.
type OpRun struct {
	Tag     uint32
	At      int
	Entries []bson.RawValue
}

// OpRuns splits a stored bucket's logs by its ops array, for tools that
// check buckets: a bucket whose arrays disagree yields the runs that are
// whole.
func OpRuns(d bson.Raw) []OpRun {
	var out []OpRun
	for _, r := range runs(d) {
		out = append(out, OpRun{Tag: r.tag, At: r.at, Entries: r.entries})
	}
	return out
}

// runs splits a bucket's logs by its ops. A bucket whose arrays disagree
// (more entries claimed than there are) yields the runs that are whole.
func runs(d bson.Raw) []run {
	ops, _ := d.Lookup(model.Ops).ArrayOK()
	logs, _ := d.Lookup(model.Logs).ArrayOK()
	opVals, _ := ops.Values()
	entries, _ := logs.Values()
	var out []run
	at := 0
	for _, v := range opVals {
		i, ok := v.Int32OK()
		if !ok {
			continue
		}
		tag, n := opParts(i)
		if at+n > len(entries) {
			break
		}
		out = append(out, run{tag: tag, at: at, entries: entries[at : at+n]})
		at += n
	}
	return out
}

// matcher finds records by their entry bytes; each record matches once.
type matcher struct {
	free map[string][]int // entry bytes -> indexes into recs not yet matched
}

// newMatcher matches entries to recs, but for those whose Index skip
// holds.
func newMatcher(recs []*parser.Record, skip map[int]bool) *matcher {
	m := &matcher{free: make(map[string][]int, len(recs))}
	for i, r := range recs {
		if skip[r.Index] {
			continue
		}
		m.free[string(r.Doc)] = append(m.free[string(r.Doc)], i)
	}
	return m
}

// claim matches every entry of r to a free record and returns their
// indexes, or nil (matching nothing) when any entry is not one of them.
func (m *matcher) claim(r run) []int {
	need := map[string]int{}
	for _, e := range r.entries {
		doc, ok := e.DocumentOK()
		if !ok {
			return nil
		}
		need[string(doc)]++
		if need[string(doc)] > len(m.free[string(doc)]) {
			return nil
		}
	}
	got := make([]int, 0, len(r.entries))
	for _, e := range r.entries {
		doc := string(e.Document())
		got = append(got, m.free[doc][0])
		m.free[doc] = m.free[doc][1:]
	}
	return got
}

// appliedAt reports how many of recs, in order, a bucket holds from
// position at on, as writes with tag: the writes of this chunk that an
// attempt whose outcome is unknown may have applied. It stops at a
// position taken reports as accounted for (another write's).
func appliedAt(d bson.Raw, at int, tag uint32, recs []*parser.Record, taken func(at int) bool) int {
	n := 0
	for _, r := range runs(d) {
		if r.at < at+n {
			continue
		}
		if r.at > at+n || r.tag != tag || n+len(r.entries) > len(recs) || n > 0 && taken(r.at) {
			break
		}
		for i, e := range r.entries {
			doc, ok := e.DocumentOK()
			if !ok || !bytes.Equal(doc, recs[n+i].Doc) {
				return n
			}
		}
		n += len(r.entries)
	}
	return n
}
