package sink

import (
	"maps"
	"slices"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// flush is one attempt at one chunk.
type flush struct {
	id, tag string
	batch   *parser.Batch
	dests   *routes // nil: every record goes to Collection
	prev    *memo
	parked  []writer.Parked
	limits  map[string]int // see memo
	drops   map[int]int    // see memo
	// retried: an earlier attempt of the chunk in this process ended in
	// Retry; writes of it may still be in the network.
	retried bool
	// found: some of the records were stored by an earlier attempt (in
	// this process or an earlier one); storedBefore counts those records.
	found        bool
	storedBefore int
	// accounted counts the records this process has counted as stored or
	// found, over this attempt and the earlier ones (see memo).
	accounted int
	// lastOwn: by own id (id_action replace), the index of the chunk's
	// last record of it; made once per flush (see lastOfOwn).
	lastOwn map[string]int
}

// memo is what an unfinished flush of a chunk learnt: the records it found
// unstorable, where the search for them stood (the write size it had come
// down to, by collection and group id), the connections a record written
// alone had lost in a row (by record index; see writer.Dropped), and how
// many of its records the totals count as stored or found already. It
// saves work; nothing depends on it for correctness.
type memo struct {
	parked    []writer.Parked
	limits    map[string]int
	drops     map[int]int
	accounted int
	known     map[int]string // parked by record index
}

// pending returns the records of recs to write, parking those an earlier
// attempt found unstorable: those it remembers, and those parked records
// its writes' placeholders hold (parked, by index, with the reason).
func (f *flush) pending(recs []*parser.Record, stored map[int]bool, parked map[int]string) []*parser.Record {
	if len(stored) == 0 && len(f.prev.known) == 0 && len(parked) == 0 {
		return recs
	}
	out := make([]*parser.Record, 0, len(recs))
	for _, r := range recs {
		switch {
		case stored[r.Index]:
		case f.prev.known[r.Index] != "":
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: f.prev.known[r.Index]})
		case parked[r.Index] != "":
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: parked[r.Index]})
		default:
			out = append(out, r)
		}
	}
	return out
}

// knownParked is the records earlier attempts parked, by index.
func (f *flush) knownParked() map[int]bool {
	if len(f.prev.known) == 0 {
		return nil
	}
	out := make(map[int]bool, len(f.prev.known))
	for i := range f.prev.known {
		out[i] = true
	}
	return out
}

// parkedSoFar is what this attempt parked and what earlier ones did that
// it did not reach: an attempt that ends before it takes the earlier
// parks up (a failed look) must not forget them.
func (f *flush) parkedSoFar() []writer.Parked {
	if len(f.prev.known) == 0 {
		return f.parked
	}
	out := slices.Clone(f.parked)
	seen := make(map[int]bool, len(out))
	for _, p := range out {
		seen[p.Index] = true
	}
	for _, i := range slices.Sorted(maps.Keys(f.prev.known)) {
		if !seen[i] {
			out = append(out, writer.Parked{Index: i, Reason: f.prev.known[i]})
		}
	}
	return out
}

// maxRemembered bounds how many unfinished chunks' unstorable records are
// remembered, so that a retried chunk does not isolate them again.
const maxRemembered = 256

// remembered returns what an unfinished flush of chunk id learnt.
func (s *Sink) remembered(id string) *memo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.unfinished.get(id); ok {
		return m
	}
	return &memo{}
}

// remember keeps m for chunk id; nil forgets the chunk.
func (s *Sink) remember(id string, m *memo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unfinished.drop(id)
	if m == nil || (len(m.parked) == 0 && len(m.limits) == 0 && len(m.drops) == 0 && m.accounted == 0) {
		return
	}
	m.known = map[int]string{}
	for _, p := range m.parked {
		m.known[p.Index] = p.Reason
	}
	s.unfinished.put(id, m)
}
