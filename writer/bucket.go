package writer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// maxGroups bounds the per-group state kept between flushes.
const maxGroups = 8192

// BucketConfig configures a Buckets writer.
type BucketConfig struct {
	Collection string // used for groups that do not name their own
	MaxRecords int
	MaxBytes   int
	// Idempotent records every write in the bucket's ops array, so that a
	// chunk sent again finds what earlier attempts stored (see Stored).
	Idempotent bool
	// WriteBatch is the most statements per update command (below 2: one).
	WriteBatch int
	// Expiry, when on, gives each bucket its expireAt.
	Expiry layout.Expiry
	// MaxGroups bounds the groups whose state is kept between flushes
	// (0: maxGroups).
	MaxGroups int
}

// Buckets writes groups of records into bucket documents with atomic
// upserts. It is safe for concurrent use; writes to one group are
// serialised, writes to different groups run in parallel.
//
// Every write names the bucket and the number of entries the writer
// believes it holds ({_id, count}): it applies only to a bucket in exactly
// that state, so it can be repeated after an unknown outcome without being
// applied twice, and two writers never overfill a bucket. A write that
// misses collides with the existing _id (DuplicateKey); the writer then
// reads the bucket and plans again.
type Buckets struct {
	store   Store
	cfg     BucketConfig
	grouper *bucketer.Config
	retry   Retry

	// batchCap, above 0, caps cfg.WriteBatch for the server written to.
	batchCap atomic.Int32

	mu     sync.Mutex
	groups map[string]*groupState
	tick   uint64
	// buffers holds the byte slices updates are built in: an update is
	// not referenced once the store has sent it.
	buffers sync.Pool
}

// CapBatch lowers WriteBatch to n (above 0) for a server that needs it.
func (b *Buckets) CapBatch(n int) { b.batchCap.Store(int32(n)) }

// Batch is the most statements per update command: WriteBatch (at least
// 1), capped for the server written to.
func (b *Buckets) Batch() int {
	size := max(b.cfg.WriteBatch, 1)
	if c := int(b.batchCap.Load()); c > 0 {
		size = min(size, c)
	}
	return size
}

// groupState is where this process last saw a group's open bucket. It is a
// hint that saves reads, never a reason to skip a write: a wrong hint makes
// the next write miss, and the writer reads.
type groupState struct {
	lock  chan struct{} // held while a write to the group is in flight
	used  uint64        // for eviction: the tick of the last use
	seq   int           // the bucket being filled
	count int           // its entries
	bytes int           // its bytes counter
	known bool          // seq, count and bytes come from a read or a write
	// seen: a write into the bucket applied, or a read found it, since
	// the state was made (a lane's planned position is not seen).
	seen bool
	// values are the keep_values values the bucket holds, by field: read
	// with the bucket's state, so exact whenever the state is.
	values map[string]map[string]bool
}

// next moves on to the next bucket of the group, presumed empty.
func (st *groupState) next() { st.seq, st.count, st.bytes, st.values = st.seq+1, 0, 0, nil }

// MaxValues is the most distinct values of a keep_values field a bucket
// keeps; beyond, valuesTruncated.<field> is set.
const MaxValues = 100

// valueKey identifies a value among a field's values.
func valueKey(v bsoncore.Value) string { return string(v.Type) + string(v.Data) }

// capValues keeps, of the values of a write, those the bucket does not
// hold yet, up to MaxValues in all; it marks a field whose values did not
// all fit. It returns the bytes they add.
func (st *groupState) capValues(sum *bucketer.Summary) (bytes int) {
	for i := range sum.Values {
		vs := &sum.Values[i]
		held := st.values[vs.Field]
		var keep []bsoncore.Value
		for _, v := range vs.Vals {
			switch {
			case held[valueKey(v)]:
			case len(held)+len(keep) >= MaxValues:
				vs.Truncated = true
			default:
				keep = append(keep, v)
				bytes += len(v.Data) + 8
			}
		}
		vs.Vals = keep
	}
	return bytes
}

// addValues records the values a write applied added.
func (st *groupState) addValues(vals []bucketer.Values) {
	for _, vs := range vals {
		if st.values == nil {
			st.values = map[string]map[string]bool{}
		}
		if st.values[vs.Field] == nil {
			st.values[vs.Field] = map[string]bool{}
		}
		for _, v := range vs.Vals {
			st.values[vs.Field][valueKey(v)] = true
		}
	}
}

// Parked is a record that cannot be stored, with the reason. Index is the
// record's index in its chunk.
type Parked struct {
	Index  int
	Reason string
}

// Outcome is what writing one group achieved, also when it ends in an
// error: the records stored and those found unstorable. Limit, when the
// search for unstorable content was under way, is the write size it had
// come down to: the next attempt of the chunk goes on from there.
type Outcome struct {
	Stored  int
	Poison  []Parked
	Limit   int
	Created int // buckets created (writes into a bucket of no entries)
	// Drops, when the write of one record was losing its connection as
	// the flush ended, holds its count by record index (see Job.Drops).
	Drops map[int]int
	// Doubts are the writes whose outcome the attempt did not learn (see
	// Job.Doubts).
	Doubts []Doubt
}

// Doubt is a write whose outcome an attempt of a chunk did not learn: the
// records Recs (by index in the chunk) into bucket Seq at position Count,
// the bucket then holding Bytes bytes, to which it adds Adds. It may still
// apply, late. The chunk's next attempt writes those of them still to
// write at that position before anything else of the group: of two writes
// at one position, one applies, so the records cannot be stored twice; a
// write of them anywhere else could store them a second time.
type Doubt struct {
	Seq, Count, Bytes, Adds int
	Recs                    []int
}

// part is one write: n records into bucket seq, which holds count entries.
type part struct {
	seq, count, n int
}

// NewBuckets returns a bucket writer.
func NewBuckets(store Store, cfg BucketConfig, grouper *bucketer.Config, retry Retry) *Buckets {
	b := &Buckets{store: store, cfg: cfg, grouper: grouper, retry: retry, groups: map[string]*groupState{}}
	b.buffers.New = func() any { return new([]byte) }
	return b
}

// acquire locks the state of group id, creating it when needed.
func (b *Buckets) acquire(ctx context.Context, id string) (*groupState, error) {
	b.mu.Lock()
	st := b.groups[id]
	if st == nil {
		b.evict()
		st = &groupState{lock: make(chan struct{}, 1)}
		b.groups[id] = st
	}
	b.tick++
	st.used = b.tick
	b.mu.Unlock()
	select {
	case st.lock <- struct{}{}:
		return st, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (st *groupState) release() { <-st.lock }

// evict drops the least recently used unlocked group states when there are
// too many. Called with b.mu held.
func (b *Buckets) evict() {
	limit := cmp.Or(b.cfg.MaxGroups, maxGroups)
	if len(b.groups) < limit {
		return
	}
	var oldest []string
	cut := b.tick - uint64(limit/2)
	for id, st := range b.groups {
		if st.used < cut && len(st.lock) == 0 {
			oldest = append(oldest, id)
		}
	}
	for _, id := range oldest {
		delete(b.groups, id)
	}
}

// Job is the records of one group to write, in chunk order. Limit, when
// above 0, caps the records per write (an earlier attempt's Outcome.Limit).
// Drops holds, by record index, the connections a record written alone
// lost in a row in earlier attempts (an earlier attempt's Outcome.Drops);
// Doubts, the earlier attempt's writes in doubt (its Outcome.Doubts).
type Job struct {
	Group  *bucketer.Group
	Recs   []*parser.Record
	Limit  int
	Drops  map[int]int
	Doubts []Doubt
}

// Write stores the records of a chunk's groups and returns, per job,
// what it stored and parked. It first takes the groups' locks, then reads
// what earlier attempts of the chunk stored (Stored), and only then asks
// jobs for the records still to write: an earlier attempt's write whose
// reply was lost can apply late, but not after the lock holder that came
// before saw the bucket move past it, so the lookup, made after, sees it.
// (Looked up before the locks, it could miss such a write and store its
// records again at the position the bucket has moved on to.) An error (a
// transient failure outlasting the flush deadline) means the flush must be
// retried; the outcomes then say what was achieved before it.
//
// The writes go out in rounds: each round takes the next write of every
// group not done (of a group whose records fill several buckets, one per
// bucket: see lanes; first, an earlier attempt's writes in doubt: see
// Doubt) and sends them as unordered commands of up to WriteBatch
// statements per collection, up to the store's concurrency. Each statement
// keeps its own outcome: a duplicate key re-plans its group, a write
// conflict or a timeout repeats it, and a statement whose outcome the reply
// does not show is repeated alone. Records whose writes fail for their
// content are isolated by splitting the group's write in halves down to the
// record, which is parked with the reason; content is suspected when
// MongoDB refuses it, or when the same write keeps losing its connection
// while the server answers otherwise.
func (b *Buckets) Write(ctx context.Context, chunkID string, groups []*bucketer.Group, jobs func(stored map[int]bool) []Job) ([]Outcome, error) {
	held, err := b.lock(ctx, groups)
	defer func() {
		for _, st := range held {
			st.release()
		}
	}()
	if err != nil {
		return nil, err
	}
	stored, where, found, err := b.stored(ctx, chunkID, groups)
	if err != nil {
		return nil, err
	}
	js := jobs(stored)
	for i := range js {
		if js[i].Doubts, err = b.inferDoubts(ctx, js[i], found[b.groupKey(js[i].Group)], stored); err != nil {
			return nil, err // nothing written: the jobs' doubts stand
		}
	}
	ends := make([]int, len(js)) // job i's writes are ws[ends[i-1]:ends[i]]
	sts := make([]*groupState, len(js))
	ws := make([]*groupWrite, 0, len(js))
	defer func() {
		for _, w := range ws {
			w.putBuffer()
		}
	}()
	for i, j := range js {
		k := b.groupKey(j.Group)
		if sts[i] = held[k]; sts[i] == nil {
			return make([]Outcome, len(js)), fmt.Errorf("writing group %s: not among the chunk's groups", j.Group.ID)
		}
		ws = b.laneWrites(ws, chunkID, j, sts[i], where[k])
		ends[i] = len(ws)
	}
	err = b.rounds(ctx, ws)
	outs := make([]Outcome, len(js))
	for i := range js {
		from := 0
		if i > 0 {
			from = ends[i-1]
		}
		outs[i] = laneOutcome(ws[from:ends[i]], sts[i])
	}
	return outs, err
}

// inferDoubts adds to j's doubts (an earlier attempt's, known to this
// process) those the lookup's runs tell of, which matter when this process
// knows none: after a restart, or when what it knew was lost. The lanes of
// one write of a group hold its records in order, each lane after the
// first in a new bucket; so records missing just before a run found at the
// start of bucket s were a lane into bucket s-1, which may still apply late
// at the count that bucket holds now (at any other count it cannot). They
// are written there first, as a doubt: of two writes at one position, one
// applies. A bucket s-1 they do not all fit in takes no write: the lane
// that held them, one write, cannot apply there.
func (b *Buckets) inferDoubts(ctx context.Context, j Job, runs []foundRun, stored map[int]bool) ([]Doubt, error) {
	out := j.Doubts
	recs := j.Group.Records
	known := map[int]bool{}
	for _, d := range j.Doubts {
		for _, i := range d.Recs {
			known[i] = true
		}
	}
	for _, r := range runs {
		if r.at != 0 || r.seq == 0 || r.first == 0 {
			continue
		}
		var idx []int
		start := r.first
		for start > 0 && !stored[recs[start-1].Index] && !known[recs[start-1].Index] {
			start--
			idx = append(idx, recs[start].Index)
		}
		if len(idx) == 0 {
			continue
		}
		slices.Reverse(idx)
		doc, err := b.findOne(ctx, j.Group, idFilter(bucketer.BucketID(j.Group.ID, r.seq-1)), Query{Projection: fillProjection})
		if err != nil {
			return out, fmt.Errorf("reading bucket %s: %w", bucketer.BucketID(j.Group.ID, r.seq-1), err)
		}
		d := Doubt{Seq: r.seq - 1, Recs: idx}
		if doc != nil {
			d.Count, d.Bytes = fill(doc)
		}
		if b.sizing(j.Group).fit(recs[start:r.first], d.Count, d.Bytes, 0) < len(idx) {
			// Full, or the records do not all fit: the lane that held
			// them, one write, cannot apply at the position it holds now.
			continue
		}
		for _, i := range idx {
			known[i] = true
		}
		out = append(out, d)
	}
	return out, nil
}

// laneWrites appends to dst the writes of job j: first one at the
// position of each earlier write in doubt (see Doubt), with its records
// still to write; then one per bucket the other records fill (see lanes),
// each on a state of its own, or one on the group's state when an earlier
// attempt was searching for content the server refuses, or when they fit
// the group's bucket. They share the group's claims (c, or new ones: one
// write alone takes no other write's position).
func (b *Buckets) laneWrites(dst []*groupWrite, chunkID string, j Job, st *groupState, c claims) []*groupWrite {
	ws, rest := b.doubtWrites(dst, chunkID, j, st, c)
	j.Recs = rest
	if len(j.Recs) > 0 {
		z := b.sizing(j.Group)
		if j.Limit > 0 || len(j.Drops) > 0 || z.fit(j.Recs, st.count, st.bytes, 0) == len(j.Recs) {
			ws = append(ws, b.newGroupWrite(chunkID, j, st))
		} else {
			for i, p := range z.split(j.Recs, st.seq, st.count, st.bytes) {
				own := &groupState{seq: p.seq, count: p.count, bytes: p.bytes, known: st.known}
				if i == 0 {
					own.values = st.values
				}
				ws = append(ws, b.newGroupWrite(chunkID, Job{Group: j.Group, Recs: p.recs}, own))
			}
		}
	}
	var l *lanes
	if len(ws)-len(dst) > 1 {
		l = &lanes{group: b.groupKey(j.Group)}
		if c == nil {
			c = claims{}
		}
	}
	for _, w := range ws[len(dst):] {
		w.lanes, w.claims = l, c
	}
	return ws
}

// doubtWrites appends to ws the writes that settle j's doubts, each at its
// position and in doubt, going on with the search for refused content where
// the earlier attempt left it (j.Limit, j.Drops), and the records of j left
// for the others. A doubt whose position the lookup found holding the
// chunk's entries (c) is settled. Otherwise its write takes its records,
// or, of identical records (which the lookup may match to any of their
// copies), copies of them still to write. The group's state, a hint, moves
// to where the bucket ends if the doubts' writes applied.
func (b *Buckets) doubtWrites(ws []*groupWrite, chunkID string, j Job, st *groupState, c claims) ([]*groupWrite, []*parser.Record) {
	if len(j.Doubts) == 0 {
		return ws, j.Recs
	}
	docOf := make(map[int]string, len(j.Group.Records))
	for _, r := range j.Group.Records {
		docOf[r.Index] = string(r.Doc)
	}
	left := map[int]*parser.Record{}       // j's records not taken, by index
	byDoc := map[string][]*parser.Record{} // j's records, by content, in order
	for _, r := range j.Recs {
		left[r.Index] = r
		byDoc[string(r.Doc)] = append(byDoc[string(r.Doc)], r)
	}
	// take takes record i, or a copy of it not taken yet.
	take := func(i int) *parser.Record {
		r := left[i]
		for _, c := range byDoc[docOf[i]] {
			if r != nil {
				break
			}
			r = left[c.Index]
		}
		if r != nil {
			delete(left, r.Index)
		}
		return r
	}
	for _, d := range j.Doubts {
		if c.taken(d.Seq, d.Count) {
			continue // found stored: the write applied
		}
		var recs []*parser.Record
		for _, i := range d.Recs {
			if r := take(i); r != nil {
				recs = append(recs, r)
			}
		}
		if len(recs) == 0 {
			continue
		}
		own := &groupState{seq: d.Seq, count: d.Count, bytes: d.Bytes, known: true}
		w := b.newGroupWrite(chunkID, Job{Group: j.Group, Recs: recs, Limit: j.Limit, Drops: j.Drops}, own)
		w.doubt = true
		ws = append(ws, w)
		if end := d.Count + len(d.Recs); d.Seq > st.seq || d.Seq == st.seq && end > st.count {
			st.seq, st.count, st.bytes, st.values = d.Seq, end, d.Bytes+d.Adds, nil
		}
	}
	rest := make([]*parser.Record, 0, len(left))
	for _, r := range j.Recs {
		if left[r.Index] != nil {
			rest = append(rest, r)
		}
	}
	return ws, rest
}

// laneOutcome is what the writes of one job achieved, in one Outcome; the
// group's state moves to the furthest bucket a write saw (not one a lane
// only planned: its write may be in doubt, and the next attempt must not
// plan past it).
func laneOutcome(ws []*groupWrite, st *groupState) Outcome {
	var out Outcome
	far := st
	for _, w := range ws {
		o := w.outcome()
		out.Stored += o.Stored
		out.Created += o.Created
		out.Poison = append(out.Poison, o.Poison...)
		out.Doubts = append(out.Doubts, o.Doubts...)
		if o.Limit > 0 && (out.Limit == 0 || o.Limit < out.Limit) {
			out.Limit = o.Limit
		}
		for i, n := range o.Drops {
			if out.Drops == nil {
				out.Drops = map[int]int{}
			}
			out.Drops[i] = n
		}
		if w.st != st && w.st.seen && (w.st.seq > far.seq || w.st.seq == far.seq && w.st.count > far.count) {
			far = w.st
		}
	}
	sort.Slice(out.Poison, func(i, j int) bool { return out.Poison[i].Index < out.Poison[j].Index })
	if far != st {
		st.seq, st.count, st.bytes, st.known, st.values = far.seq, far.count, far.bytes, far.known, far.values
	}
	return out
}

// lock takes the states of groups, by groupKey, and returns those it holds,
// also with an error. Groups are locked in one order, so flushes sharing
// groups never wait for each other in a cycle.
func (b *Buckets) lock(ctx context.Context, groups []*bucketer.Group) (map[string]*groupState, error) {
	keys := make([]string, 0, len(groups))
	for _, g := range groups {
		keys = append(keys, b.groupKey(g))
	}
	sort.Strings(keys)
	held := map[string]*groupState{}
	for _, k := range keys {
		if held[k] != nil {
			continue
		}
		st, err := b.acquire(ctx, k)
		if err != nil {
			return held, err
		}
		held[k] = st
	}
	return held, nil
}

// groupKey names a group's state: its collection and id.
func (b *Buckets) groupKey(g *bucketer.Group) string { return b.collection(g) + "\x00" + g.ID }

func (b *Buckets) collection(g *bucketer.Group) string {
	if g.Collection != "" {
		return g.Collection
	}
	return b.cfg.Collection
}
