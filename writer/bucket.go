package writer

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
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
	// scanAt is the size of groups at which evict looks for states to
	// drop next: after a look that left many (held by flushes in
	// progress), not before the map has doubled, so that a chunk of
	// many groups costs a look per doubling, not one per group.
	scanAt int
	scans  int // walks of groups, for tests
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
	lock chan struct{} // held while a write to the group is in flight
	used uint64        // for eviction: the tick of the last use
	// waiting counts the flushes that took the state from the map and
	// wait for its lock (under Buckets.mu): it must not be dropped then,
	// or the next flush would make a second state of the group.
	waiting int
	seq     int  // the bucket being filled
	count   int  // its entries
	bytes   int  // its bytes counter
	known   bool // seq, count and bytes come from a read or a write
	// seen: bucket seq exists: a write into it applied, or a read found
	// it (a bucket planned after a full one is not seen).
	seen bool
	// values are the keep_values values the bucket holds, by field: read
	// with the bucket's state, so exact whenever the state is.
	values map[string]map[string]bool
	// sealed: bucket seq takes no more writes (see fence).
	sealed bool
	// fenced: no write an earlier process sent can apply any more: this
	// process sealed the group's open buckets since it made the state, or
	// inserted the group's first bucket.
	fenced bool
}

// next moves on to the next bucket of the group, presumed empty.
func (st *groupState) next() {
	st.seq, st.count, st.bytes, st.values, st.sealed, st.seen = st.seq+1, 0, 0, nil, false, false
}

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
	st.waiting++
	b.mu.Unlock()
	var err error
	select {
	case st.lock <- struct{}{}:
	case <-ctx.Done():
		err = ctx.Err()
	}
	b.mu.Lock()
	st.waiting--
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (st *groupState) release() { <-st.lock }

// evict drops the least recently used unlocked group states when there are
// too many. Called with b.mu held. Its cost, a walk of the states, comes
// at most once per doubling of the states (see scanAt): the states a
// flush holds cannot go, and a chunk of many groups holds them all.
func (b *Buckets) evict() {
	limit := cmp.Or(b.cfg.MaxGroups, maxGroups)
	if len(b.groups) < max(limit, b.scanAt) {
		return
	}
	b.scan(limit)
}

// scan drops the unlocked group states not used in the last limit/2 uses.
// Called with b.mu held.
func (b *Buckets) scan(limit int) {
	b.scans++
	cut := b.tick - uint64(limit/2)
	for id, st := range b.groups {
		if st.used < cut && len(st.lock) == 0 && st.waiting == 0 {
			delete(b.groups, id)
		}
	}
	b.scanAt = 2 * len(b.groups)
}

// trim, after a flush that held more group states than limit allows,
// drops those no flush holds: the memory a chunk of many groups took is
// given back when it ends, at the cost of one walk, which that chunk's
// records pay for.
func (b *Buckets) trim(held int) {
	limit := cmp.Or(b.cfg.MaxGroups, maxGroups)
	if held <= limit/2 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.groups) > limit {
		b.scan(limit)
	}
}

// Job is the records of one group to write, in chunk order. Limit, when
// above 0, caps the records per write (an earlier attempt's Outcome.Limit).
// Drops holds, by record index, the connections a record written alone
// lost in a row in earlier attempts (an earlier attempt's Outcome.Drops).
type Job struct {
	Group *bucketer.Group
	Recs  []*parser.Record
	Limit int
	Drops map[int]int
}

// Write stores the records of a chunk's groups and returns, per job,
// what it stored and parked. It fences, then looks, then writes:
//   - It takes the groups' locks, then, with fence (an earlier attempt of
//     the chunk in this process may have writes still in the network),
//     seals every open bucket of the groups (see fence).
//   - It then reads what earlier attempts of the chunk stored (Stored),
//     none of the records in parked (parked by an earlier attempt), and
//     which records an earlier attempt recorded parked in a placeholder
//     (see refence): jobs gets both, by record index.
//     After a fence no earlier write can apply any more but at the next
//     bucket of a group (which a write may insert, never one that holds
//     entries). A write that finds that bucket holding the chunk's
//     entries, or that finds buckets of a group this process has not
//     fenced since it knew it (an earlier process, or this one before it
//     forgot the group, may have writes in the network), fences the group
//     and looks again.
//   - Only then it asks jobs for the records still to write.
//
// An error (a transient failure outlasting the flush deadline) means the
// flush must be retried; the outcomes then say what was achieved before
// it.
//
// The writes go out in rounds: each round takes the next write of every
// group not done and sends them as unordered commands of up to
// WriteBatch statements per collection, up to the store's concurrency.
// Each statement keeps its own outcome: a duplicate key (or an update that
// misses) re-plans its group, a write conflict or a timeout repeats it,
// and a statement whose outcome the reply does not show is repeated alone.
// Records whose writes fail for their content are isolated by splitting
// the group's write in halves down to the record, which is parked with
// the reason; content is suspected when MongoDB refuses it, or when the
// same write keeps losing its connection while the server answers
// otherwise.
func (b *Buckets) Write(ctx context.Context, chunkID string, groups []*bucketer.Group, fence bool, parked map[int]bool, jobs func(stored map[int]bool, parked map[int]string) []Job) ([]Outcome, error) {
	held, err := b.lock(ctx, groups)
	defer func() {
		for _, st := range held {
			st.release()
		}
		b.trim(len(held))
	}()
	if err != nil {
		return nil, err
	}
	if err := b.fence(ctx, groups, held, fence); err != nil {
		return nil, err
	}
	l, err := b.stored(ctx, chunkID, groups, parked)
	if err != nil {
		return nil, err
	}
	js := jobs(l.stored, l.parked)
	ws := make([]*groupWrite, len(js))
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.putBuffer()
			}
		}
	}()
	for i, j := range js {
		k := b.groupKey(j.Group)
		st := held[k]
		if st == nil {
			return make([]Outcome, len(js)), fmt.Errorf("writing group %s: not among the chunk's groups", j.Group.ID)
		}
		ws[i] = b.newGroupWrite(chunkID, j, st)
		ws[i].parked = parkedBefore(j, l.stored)
		ws[i].claims = l.where[k]
		if ws[i].claims == nil {
			ws[i].claims = claims{}
		}
	}
	err = b.rounds(ctx, ws)
	outs := make([]Outcome, len(js))
	for i, w := range ws {
		outs[i] = w.outcome()
	}
	return outs, err
}

// parkedBefore is the records of j's group that j leaves out but were not
// found stored: parked by an earlier attempt.
func parkedBefore(j Job, stored map[int]bool) map[int]bool {
	if len(j.Recs) == len(j.Group.Records) {
		return nil
	}
	todo := make(map[int]bool, len(j.Recs))
	for _, r := range j.Recs {
		todo[r.Index] = true
	}
	parked := map[int]bool{}
	for _, r := range j.Group.Records {
		if !todo[r.Index] && !stored[r.Index] {
			parked[r.Index] = true
		}
	}
	return parked
}

// fence, with all, seals every open bucket of the groups, and every
// placeholder still open to a record of a park: an update per collection
// and sealPart groups. A sealed bucket takes no write, so no write sent
// before can apply to it any more (every write's guard names an open
// bucket), nor a record of a park (see refence). The next bucket of a
// group is then inserted by the next write, which collides with any
// earlier one's insert of it.
func (b *Buckets) fence(ctx context.Context, groups []*bucketer.Group, held map[string]*groupState, all bool) error {
	if !b.cfg.Idempotent || !all {
		return nil
	}
	byColl := map[string][]*bucketer.Group{}
	var colls []string
	for _, g := range groups {
		c := b.collection(g)
		if byColl[c] == nil {
			colls = append(colls, c)
		}
		byColl[c] = append(byColl[c], g)
	}
	for _, c := range colls {
		gs := byColl[c]
		for part := gs; len(part) > 0; {
			n := min(len(part), sealPart)
			if err := b.seal(ctx, c, part[:n]); err != nil {
				return err
			}
			part = part[n:]
		}
		for _, g := range gs {
			st := held[b.groupKey(g)]
			// Sealed, when it exists: a write may still insert it. A
			// group whose buckets this process does not know stays
			// unfenced: a late insert may still land in the bucket after
			// the newest, and the writer, reading the newest when its
			// first write misses, might pass it by as others' buckets
			// pile up; it fences again where it learns the newest.
			st.fenced, st.sealed = st.known, st.known && st.seen
		}
	}
	return nil
}

// sealPart is the most groups one sealing update names.
const sealPart = 100

// seal seals the open buckets of gs, all in collection coll.
func (b *Buckets) seal(ctx context.Context, coll string, gs []*bucketer.Group) error {
	f := bsoncore.NewDocumentBuilder()
	if len(gs) == 1 {
		elems, _ := bsoncore.Document(b.groupFilter(gs[0])).Elements()
		for _, e := range elems {
			f.AppendValue(e.Key(), e.Value())
		}
	} else {
		or := bsoncore.NewArrayBuilder()
		for _, g := range gs {
			or.AppendDocument(bsoncore.Document(b.groupFilter(g)))
		}
		f.AppendArray("$or", or.Build())
	}
	f.AppendDocument(model.Sealed, unsealedFilter)
	filter := bson.Raw(f.Build())
	err := b.retry.Do(ctx, func() error { return b.store.UpdateMany(ctx, coll, filter, sealUpdate) })
	if err != nil {
		return fmt.Errorf("fencing the earlier writes of %d groups in %s: %w", len(gs), coll, err)
	}
	return nil
}

var (
	// openFilter matches an open bucket's sealed field: there is none.
	openFilter = bsoncore.NewDocumentBuilder().AppendBoolean("$exists", false).Build()
	// unsealedFilter matches a bucket that is open, or a placeholder that
	// may still record a record parked (see Buckets.refence).
	unsealedFilter = bsoncore.NewDocumentBuilder().AppendBoolean("$ne", true).Build()
	sealUpdate     = bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendBoolean(model.Sealed, true).Build()).Build())
)

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
