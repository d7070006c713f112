package writer

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// headerReserve is the most a bucket's fixed fields take (_id, window
// bounds, counters, array headers), beside its key and statistics.
const headerReserve = 512

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
	if len(b.groups) < maxGroups {
		return
	}
	var oldest []string
	cut := b.tick - uint64(maxGroups/2)
	for id, st := range b.groups {
		if st.used < cut && len(st.lock) == 0 {
			oldest = append(oldest, id)
		}
	}
	for _, id := range oldest {
		delete(b.groups, id)
	}
}

// Stored finds what earlier attempts of the chunk stored in the buckets of
// groups, wherever in the groups' buckets it is: one read per collection,
// narrowed by the lookup index ({key, start}) to the groups' buckets that
// hold an op element with the chunk's tag. It returns the indexes (in the
// chunk) of the records found; nil without Idempotent.
func (b *Buckets) Stored(ctx context.Context, chunkID string, groups []*bucketer.Group) (map[int]bool, error) {
	if !b.cfg.Idempotent || len(groups) == 0 {
		return nil, nil
	}
	tag := ChunkTag(chunkID)
	byColl := map[string][]*bucketer.Group{}
	var colls []string
	for _, g := range groups {
		c := b.collection(g)
		if byColl[c] == nil {
			colls = append(colls, c)
		}
		byColl[c] = append(byColl[c], g)
	}
	stored := map[int]bool{}
	for _, coll := range colls {
		gs := byColl[coll]
		var docs []bson.Raw
		err := b.retry.Do(ctx, func() (err error) {
			docs, err = b.store.Find(ctx, coll, storedFilter(gs, tag), Query{Projection: runsProjection})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("looking for earlier writes of chunk %s in %s: %w", chunkID, coll, err)
		}
		byID := make(map[string]*bucketer.Group, len(gs))
		for _, g := range gs {
			byID[g.ID] = g
		}
		matchers := map[*bucketer.Group]*matcher{}
		for _, d := range docs {
			id, _ := d.Lookup("_id").StringValueOK()
			g := byID[id[:max(strings.LastIndexByte(id, '-'), 0)]]
			if g == nil {
				continue
			}
			m := matchers[g]
			if m == nil {
				m = newMatcher(g.Records)
				matchers[g] = m
			}
			for _, r := range runs(d) {
				if r.tag != tag {
					continue
				}
				for _, i := range m.claim(r) {
					stored[g.Records[i].Index] = true
				}
			}
		}
	}
	return stored, nil
}

// storedFilter selects the buckets of gs (by key, and start when windowed)
// that hold an op element with tag.
func storedFilter(gs []*bucketer.Group, tag uint32) bson.Raw {
	var starts []time.Time
	keys := map[int64]*bsoncore.ArrayBuilder{} // by start, in ms
	for _, g := range gs {
		ms := g.Start.UnixMilli()
		if keys[ms] == nil {
			starts = append(starts, g.Start)
			keys[ms] = bsoncore.NewArrayBuilder()
		}
		keys[ms].AppendDocument(g.Key)
	}
	clause := func(start time.Time) bsoncore.Document {
		c := bsoncore.NewDocumentBuilder().AppendDocument("key",
			bsoncore.NewDocumentBuilder().AppendArray("$in", keys[start.UnixMilli()].Build()).Build())
		if !start.IsZero() {
			c.AppendDateTime("start", start.UnixMilli())
		}
		return c.Build()
	}
	f := bsoncore.NewDocumentBuilder()
	if len(starts) == 1 {
		elems, _ := clause(starts[0]).Elements()
		for _, e := range elems {
			f.AppendValue(e.Key(), e.Value())
		}
	} else {
		or := bsoncore.NewArrayBuilder()
		for _, s := range starts {
			or.AppendDocument(clause(s))
		}
		f.AppendArray("$or", or.Build())
	}
	f.AppendDocument("ops", tagFilter(tag))
	return bson.Raw(f.Build())
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
// group not done and sends them as unordered commands of up to WriteBatch
// statements per collection, up to the store's concurrency. Each statement
// keeps its own outcome: a duplicate key re-plans its group, a write
// conflict or a timeout repeats it, and a statement whose outcome the reply
// does not show is repeated alone. Records whose writes fail for their
// content are isolated by splitting the group's write in halves down to the
// record, which is parked with the reason; content is suspected when
// MongoDB refuses it, or when the same write keeps losing its connection
// while the server answers otherwise.
func (b *Buckets) Write(ctx context.Context, chunkID string, groups []*bucketer.Group, jobs func(stored map[int]bool) []Job) ([]Outcome, error) {
	keys := make([]string, len(groups))
	order := make([]int, len(groups))
	for i, g := range groups {
		keys[i], order[i] = b.collection(g)+"\x00"+g.ID, i
	}
	// Groups are locked in one order, so flushes sharing groups never wait
	// for each other in a cycle.
	sort.Slice(order, func(x, y int) bool { return keys[order[x]] < keys[order[y]] })
	held := map[string]*groupState{}
	defer func() {
		for _, st := range held {
			st.release()
		}
	}()
	for _, i := range order {
		if held[keys[i]] != nil {
			continue
		}
		st, err := b.acquire(ctx, keys[i])
		if err != nil {
			return nil, err
		}
		held[keys[i]] = st
	}
	stored, err := b.Stored(ctx, chunkID, groups)
	if err != nil {
		return nil, err
	}
	js := jobs(stored)
	ws := make([]*groupWrite, len(js))
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.putBuffer()
			}
		}
	}()
	for i, j := range js {
		st := held[b.collection(j.Group)+"\x00"+j.Group.ID]
		if st == nil {
			return make([]Outcome, len(js)), fmt.Errorf("writing group %s: not among the chunk's groups", j.Group.ID)
		}
		ws[i] = b.newGroupWrite(chunkID, j, st)
	}
	err = b.rounds(ctx, ws)
	outs := make([]Outcome, len(js))
	for i, w := range ws {
		outs[i] = w.outcome()
	}
	return outs, err
}

// rounds runs the writes of ws until every group is done: each round
// plans the next write of every group not done, sends them, and feeds each
// statement's outcome back to its group's protocol.
func (b *Buckets) rounds(ctx context.Context, ws []*groupWrite) error {
	active := ws
	lost := 0 // the rounds in a row in which a command of several statements lost its connection
	for {
		if active = b.plan(active); len(active) == 0 {
			return nil
		}
		cmds := b.commands(active)
		errs := b.send(ctx, cmds)
		sharedLost := false
		for i, c := range cmds {
			sharedLost = sharedLost || len(c) > 1 && mongo.IsNetworkError(errs[i][0])
		}
		var split bool
		lost, split = splitNext(lost, sharedLost)
		split = split && b.answers(ctx)
		var (
			wait  int
			slow  *groupWrite
			fails []error
		)
		for i, c := range cmds {
			for j, w := range c {
				backoff, err := b.settle(ctx, w, replied{err: errs[i][j], shared: len(c) > 1, split: split})
				if err != nil {
					fails = append(fails, err)
				}
				if backoff > wait {
					wait, slow = backoff, w
				}
			}
		}
		if len(fails) > 0 {
			return errors.Join(fails...)
		}
		if wait > 0 {
			if err := b.retry.Wait(ctx, wait); err != nil {
				return fmt.Errorf("writing bucket %s: %w", bucketer.BucketID(slow.g.ID, slow.p.seq), slow.err)
			}
		}
	}
}

// plan returns the writes of ws that have a next write, its statement
// built.
func (b *Buckets) plan(ws []*groupWrite) []*groupWrite {
	round := ws[:0:0]
	for _, w := range ws {
		if w.next(planNext{}).kind == actWrite {
			w.encode()
			round = append(round, w)
		}
	}
	return round
}

// send sends each command and returns each statement's error.
func (b *Buckets) send(ctx context.Context, cmds [][]*groupWrite) [][]error {
	errs := make([][]error, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					err := fmt.Errorf("panic: %v\n%s", r, debug.Stack())
					errs[i] = slices.Repeat([]error{err}, len(c))
				}
			}()
			ups := make([]Upsert, len(c))
			for j, w := range c {
				ups[j] = w.stmt
			}
			errs[i] = b.store.Upserts(ctx, b.collection(c[0].g), ups)
		}()
	}
	wg.Wait()
	return errs
}

// settle feeds the reply r to w's protocol and carries out what it asks
// until the next round. backoff, above 0, is the attempt number to wait for
// before the write is repeated; an error ends the flush.
func (b *Buckets) settle(ctx context.Context, w *groupWrite, r replied) (backoff int, _ error) {
	r.adds, r.vals, r.bytes = w.adds, w.vals, len(w.stmt.Update)
	w.putBuffer()
	a := w.next(r)
	for {
		switch a.kind {
		case actPing:
			a = w.next(pinged(b.answers(ctx)))
		case actControl:
			a = w.next(sendControl(ctx, b.store, b.collection(w.g), a.bytes))
		case actRead:
			rd, err := b.read(ctx, w, a)
			if err != nil && !rd.found {
				return 0, err
			}
			a = w.next(rd)
		case actBackoff:
			return a.attempt, nil
		case actFail:
			return 0, a.err
		default:
			return 0, nil
		}
	}
}

// answers reports whether the server answers a ping before the flush's
// deadline.
func (b *Buckets) answers(ctx context.Context) bool {
	return ctx.Err() == nil && b.store.Ping(ctx) == nil
}

// read reads the bucket the write of w.p missed, as a asks. When the bucket
// holds a write of this chunk at p.count, an earlier attempt of p (whose
// outcome was unknown) was applied: read compares the entries and says how
// many of w.recs, in order, it stored.
func (b *Buckets) read(ctx context.Context, w *groupWrite, a action) (bucketRead, error) {
	g, p := w.g, w.p
	id := bucketer.BucketID(g.ID, p.seq)
	var (
		doc bson.Raw
		err error
	)
	if a.newest {
		doc, err = b.findOne(ctx, g, b.groupFilter(g), Query{Projection: fillProjection, Sort: bySeqDesc, Limit: 1})
	} else {
		q := Query{Projection: fillProjection}
		if a.entries {
			q.Projection = entriesProjection
		}
		doc, err = b.findOne(ctx, g, idFilter(id), q)
	}
	if err != nil {
		return bucketRead{}, fmt.Errorf("reading bucket %s: %w", id, err)
	}
	if doc == nil {
		return bucketRead{}, nil
	}
	r := bucketRead{found: true, seq: p.seq, values: heldValues(doc)}
	if s, ok := doc.Lookup("seq").AsInt64OK(); ok {
		r.seq = int(s)
	}
	r.count, r.bytes = fill(doc)
	if r.seq == p.seq && b.cfg.Idempotent && tagAt(doc, p.count, w.tag) {
		if _, ok := doc.Lookup("logs").ArrayOK(); !ok {
			if doc, err = b.findOne(ctx, g, idFilter(id), Query{Projection: entriesProjection}); err != nil || doc == nil {
				r.gone, r.err = true, err
				return r, err
			}
		}
		r.applied = appliedAt(doc, p.count, w.tag, w.recs)
	}
	return r, nil
}

// commands splits the writes of a round into commands: by collection, up
// to WriteBatch statements each, a write to be sent alone in one of its own.
func (b *Buckets) commands(round []*groupWrite) [][]*groupWrite {
	size := max(b.cfg.WriteBatch, 1)
	if c := int(b.batchCap.Load()); c > 0 {
		size = min(size, c)
	}
	colls, own := make([]string, len(round)), make([]bool, len(round))
	for i, w := range round {
		colls[i], own[i] = b.collection(w.g), w.ownCommand()
	}
	var cmds [][]*groupWrite
	for _, idx := range batch(colls, own, size) {
		c := make([]*groupWrite, len(idx))
		for j, i := range idx {
			c[j] = round[i]
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// groupWrite is the writing of one group's records: its protocol, and the
// statement of the write it planned.
type groupWrite struct {
	groupProto
	b    *Buckets
	g    *bucketer.Group
	tag  uint32
	stmt Upsert
	buf  *[]byte           // holds stmt.Update
	adds int               // the bytes the write adds
	vals []bucketer.Values // the keep_values values it adds
}

func (b *Buckets) newGroupWrite(chunkID string, j Job, st *groupState) *groupWrite {
	size := sizing{maxRecords: b.cfg.MaxRecords, maxBytes: b.cfg.MaxBytes, header: b.header(j.Group),
		extra: (len(b.grouper.CountBy) + len(b.grouper.KeepValues)) * 160}
	return &groupWrite{groupProto: newGroupProto(st, size, j), b: b, g: j.Group, tag: ChunkTag(chunkID)}
}

// encode builds the statement of the write planned.
func (w *groupWrite) encode() {
	b, st := w.b, w.st
	batch := w.recs[:w.p.n]
	sum := b.grouper.Summarize(batch)
	w.adds = sum.Bytes + w.p.n*w.size.extra + st.capValues(&sum)
	w.vals = sum.Values
	if b.cfg.Idempotent {
		w.adds += opsBytes(w.p.n)
	}
	w.putBuffer()
	w.buf = b.buffers.Get().(*[]byte)
	w.stmt = Upsert{Filter: b.filter(w.g, w.p), Update: b.update((*w.buf)[:0], w.g, w.p, batch, sum, w.adds, w.tag)}
}

func (w *groupWrite) putBuffer() {
	if w.buf != nil {
		*w.buf = w.stmt.Update[:0]
		w.b.buffers.Put(w.buf)
		w.buf, w.stmt = nil, Upsert{}
	}
}

// findOne returns the first document of g's collection matching filter, or
// nil.
func (b *Buckets) findOne(ctx context.Context, g *bucketer.Group, filter bson.Raw, q Query) (bson.Raw, error) {
	var docs []bson.Raw
	err := b.retry.Do(ctx, func() (err error) {
		docs, err = b.store.Find(ctx, b.collection(g), filter, q)
		return err
	})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

var (
	fillProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("seq", 1).AppendInt32("count", 1).
			AppendInt32("bytes", 1).AppendInt32("ops", 1).AppendInt32("values", 1).Build())
	entriesProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("seq", 1).AppendInt32("count", 1).
				AppendInt32("bytes", 1).AppendInt32("ops", 1).AppendInt32("values", 1).AppendInt32("logs", 1).Build())
	runsProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("ops", 1).AppendInt32("logs", 1).Build())
	bySeqDesc      = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("seq", -1).Build())
)

func idFilter(id string) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", id).Build())
}

// groupFilter selects the buckets of g through the lookup index.
func (b *Buckets) groupFilter(g *bucketer.Group) bson.Raw {
	f := bsoncore.NewDocumentBuilder().AppendDocument("key", g.Key)
	if !g.Start.IsZero() {
		f.AppendDateTime("start", g.Start.UnixMilli())
	}
	return bson.Raw(f.Build())
}

// heldValues reads the keep_values values of a bucket.
func heldValues(d bson.Raw) map[string]map[string]bool {
	vd, ok := d.Lookup("values").DocumentOK()
	fields, err := vd.Elements()
	if !ok || err != nil || len(fields) == 0 {
		return nil
	}
	out := map[string]map[string]bool{}
	for _, f := range fields {
		arr, _ := f.Value().ArrayOK()
		vals, _ := arr.Values()
		m := map[string]bool{}
		for _, v := range vals {
			m[valueKey(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})] = true
		}
		out[f.Key()] = m
	}
	return out
}

func fill(d bson.Raw) (count, bytes int) {
	return int(numberOf(d.Lookup("count"))), int(numberOf(d.Lookup("bytes")))
}

func numberOf(v bson.RawValue) int64 {
	if i, ok := v.AsInt64OK(); ok {
		return i
	}
	return 0
}

func (b *Buckets) collection(g *bucketer.Group) string {
	if g.Collection != "" {
		return g.Collection
	}
	return b.cfg.Collection
}

// header is the bytes a bucket of g takes beside its entries and ops.
func (b *Buckets) header(g *bucketer.Group) int {
	h := headerReserve + len(g.Key)
	for _, f := range b.grouper.Stats {
		h += 3*(len(f)+16) + 16
	}
	for _, f := range b.grouper.CountBy {
		h += len(f) + 8
	}
	return h
}

// filter is the update filter of part p: the bucket, in the state p
// assumes. It also names the bucket's key fields and window start, which
// the _id implies: a collection sharded on them (or on a hashed _id) routes
// the upsert to one shard, as MongoDB requires of upserts.
func (b *Buckets) filter(g *bucketer.Group, p *part) bson.Raw {
	f := bsoncore.NewDocumentBuilder().AppendString("_id", bucketer.BucketID(g.ID, p.seq))
	elems, _ := g.Key.Elements()
	for _, e := range elems {
		f.AppendValue("key."+e.Key(), e.Value())
	}
	if !g.Start.IsZero() {
		f.AppendDateTime("start", g.Start.UnixMilli())
	}
	return bson.Raw(f.AppendInt32("count", int32(p.count)).Build())
}

// update builds the update document of one write into dst.
func (b *Buckets) update(dst []byte, g *bucketer.Group, p *part, recs []*parser.Record, sum bucketer.Summary, size int, tag uint32) bson.Raw {
	at, dst := bsoncore.ReserveLength(dst)

	ins, dst := bsoncore.AppendDocumentElementStart(dst, "$setOnInsert")
	dst = bsoncore.AppendDocumentElement(dst, "key", g.Key)
	if !g.Start.IsZero() {
		dst = bsoncore.AppendTimeElement(dst, "start", g.Start)
		dst = bsoncore.AppendTimeElement(dst, "end", g.End)
	}
	dst = bsoncore.AppendInt32Element(dst, "seq", int32(p.seq))
	dst, _ = bsoncore.AppendDocumentEnd(dst, ins)

	push, dst := bsoncore.AppendDocumentElementStart(dst, "$push")
	logs, dst := bsoncore.AppendDocumentElementStart(dst, "logs")
	each, dst := bsoncore.AppendArrayElementStart(dst, "$each")
	var idx []byte
	for i, r := range recs {
		idx = strconv.AppendInt(idx[:0], int64(i), 10)
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, string(idx))
		dst = append(dst, r.Doc...)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, each)
	dst, _ = bsoncore.AppendDocumentEnd(dst, logs)
	if b.cfg.Idempotent {
		ops, dst2 := bsoncore.AppendDocumentElementStart(dst, "ops")
		arr, dst3 := bsoncore.AppendArrayElementStart(dst2, "$each")
		dst3 = appendOps(dst3, tag, p.n)
		dst3, _ = bsoncore.AppendArrayEnd(dst3, arr)
		dst, _ = bsoncore.AppendDocumentEnd(dst3, ops)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, push)

	var truncated []string
	adds := false
	for _, vs := range sum.Values {
		if vs.Truncated {
			truncated = append(truncated, vs.Field)
		}
		adds = adds || len(vs.Vals) > 0
	}
	if adds { // an empty operator is an error
		add, d := bsoncore.AppendDocumentElementStart(dst, "$addToSet")
		for _, vs := range sum.Values {
			if len(vs.Vals) == 0 {
				continue
			}
			field, d2 := bsoncore.AppendDocumentElementStart(d, "values."+vs.Field)
			arr, d3 := bsoncore.AppendArrayElementStart(d2, "$each")
			for i, v := range vs.Vals {
				d3 = bsoncore.AppendValueElement(d3, strconv.Itoa(i), v)
			}
			d3, _ = bsoncore.AppendArrayEnd(d3, arr)
			d, _ = bsoncore.AppendDocumentEnd(d3, field)
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, add)
	}
	if len(truncated) > 0 {
		set, d := bsoncore.AppendDocumentElementStart(dst, "$set")
		for _, f := range truncated {
			d = bsoncore.AppendBooleanElement(d, "valuesTruncated."+f, true)
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, set)
	}

	inc, dst := bsoncore.AppendDocumentElementStart(dst, "$inc")
	dst = bsoncore.AppendInt32Element(dst, "count", int32(p.n))
	dst = bsoncore.AppendInt64Element(dst, "bytes", int64(size))
	for _, s := range sum.Stats {
		if s.Float {
			dst = bsoncore.AppendDoubleElement(dst, "stats."+s.Field+".sum", s.Sum)
		} else {
			dst = bsoncore.AppendInt64Element(dst, "stats."+s.Field+".sum", s.IntSum)
		}
		// The numeric values summed: sum / n is the exact average.
		dst = bsoncore.AppendInt64Element(dst, "stats."+s.Field+".n", int64(s.N))
	}
	for _, c := range sum.Counts {
		dst = bsoncore.AppendInt32Element(dst, "counts."+c.Field+"."+c.Value, int32(c.N))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, inc)

	mn, dst := bsoncore.AppendDocumentElementStart(dst, "$min")
	dst = bsoncore.AppendTimeElement(dst, "minTs", sum.MinTs)
	for _, s := range sum.Stats {
		dst = appendNumber(dst, "stats."+s.Field+".min", s.Min, s.Float)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, mn)

	mx, dst := bsoncore.AppendDocumentElementStart(dst, "$max")
	dst = bsoncore.AppendTimeElement(dst, "maxTs", sum.MaxTs)
	for _, s := range sum.Stats {
		dst = appendNumber(dst, "stats."+s.Field+".max", s.Max, s.Float)
	}
	if b.cfg.Expiry.On() {
		dst = bsoncore.AppendTimeElement(dst, layout.ExpireField, b.cfg.Expiry.Bucket(g.ID, g.Key, g.End, sum.MaxTs))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, mx)

	dst = append(dst, 0)
	return bson.Raw(bsoncore.UpdateLength(dst, at, int32(len(dst))-at))
}

// appendNumber appends v as an int64 when the values were integers.
func appendNumber(dst []byte, key string, v float64, isFloat bool) []byte {
	if isFloat {
		return bsoncore.AppendDoubleElement(dst, key, v)
	}
	return bsoncore.AppendInt64Element(dst, key, int64(v))
}
