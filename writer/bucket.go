package writer

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
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
	// TTL, when set, gives each bucket an expireAt of its newest entry's
	// time + TTL + a jitter in [0, TTLJitter) fixed per bucket.
	TTL, TTLJitter time.Duration
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

	mu     sync.Mutex
	groups map[string]*groupState
	tick   uint64
	// buffers holds the byte slices updates are built in: an update is
	// not referenced once the store has sent it.
	buffers sync.Pool
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
}

// next moves on to the next bucket of the group, presumed empty.
func (st *groupState) next() { st.seq, st.count, st.bytes = st.seq+1, 0, 0 }

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
	Stored int
	Poison []Parked
	Limit  int
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

// suspectAfter is how many network errors in a row one write may meet,
// the server answering a ping after the last, before its content is
// suspected: some MongoDB-compatible servers drop the connection on
// values they do not support.
const suspectAfter = 2

// Write stores recs, records of g in chunk order, and returns what it
// stored and parked. limit, when above 0, caps the records per write (an
// earlier attempt's Outcome.Limit). An error (a transient failure
// outlasting the flush deadline) means the flush must be retried; the
// outcome then says what was achieved before it.
//
// Records whose writes fail for their content are isolated by splitting
// the write in halves down to the record, which is parked with the reason;
// content is suspected when MongoDB refuses it, or when the same write
// keeps losing its connection while the server answers otherwise.
func (b *Buckets) Write(ctx context.Context, chunkID string, g *bucketer.Group, recs []*parser.Record, limit int) (out Outcome, err error) {
	st, err := b.acquire(ctx, b.collection(g)+"\x00"+g.ID)
	if err != nil {
		return out, err
	}
	defer st.release()
	tag := ChunkTag(chunkID)
	extra := len(b.grouper.CountBy) * 160
	header := b.header(g)
	var (
		p *part
		// While suspect > 0, the next suspect records are written at most
		// limit at a time.
		suspect int
		// doubt: a write to bucket p.seq at p.count may have been applied.
		doubt            bool
		attempt, netErrs int
		unexplained      int
	)
	if limit > 0 {
		suspect = len(recs)
	}
	defer func() {
		if suspect > 0 {
			out.Limit = limit
		}
	}()
	park := func(reason string) {
		out.Poison = append(out.Poison, Parked{recs[0].Index, reason})
		recs = recs[1:]
		suspect = max(suspect-1, 0)
		p = nil
	}
	for len(recs) > 0 {
		if p == nil {
			room := b.cfg.MaxRecords - st.count
			if suspect > 0 {
				room = min(room, limit)
			}
			k := bucketer.Fit(recs, room, b.cfg.MaxBytes-header-st.bytes-opElemBytes, extra+1)
			if k == 0 {
				if st.count == 0 {
					park(fmt.Sprintf("record of %d bytes does not fit in an empty bucket (bucket_max_bytes %d)",
						len(recs[0].Doc), b.cfg.MaxBytes))
					continue
				}
				st.next()
				continue
			}
			p = &part{seq: st.seq, count: st.count, n: k}
			attempt, netErrs = 0, 0
		}
		batch := recs[:p.n]
		sum := b.grouper.Summarize(batch)
		size := sum.Bytes + p.n*extra
		if b.cfg.Idempotent {
			size += opsBytes(p.n)
		}
		buf := b.buffers.Get().(*[]byte)
		update := b.update((*buf)[:0], g, p, batch, sum, size, tag)
		_, err := b.store.Upsert(ctx, b.collection(g), b.filter(g, p), update)
		*buf = update[:0]
		b.buffers.Put(buf)
		class := Classify(err)
		if class == Transient && mongo.IsNetworkError(err) {
			// Once a search is under way, the content around it is suspect
			// from the first dropped connection.
			if netErrs++; (netErrs >= suspectAfter || limit > 0) && ctx.Err() == nil && b.store.Ping(ctx) == nil {
				class = Poison
				err = fmt.Errorf("the server closed the connection on this write %d times while answering otherwise: %w", netErrs, err)
			}
		}
		switch class {
		case OK:
			st.seq, st.count, st.bytes, st.known = p.seq, p.count+p.n, st.bytes+size, true
			out.Stored += p.n
			recs = recs[p.n:]
			suspect = max(suspect-p.n, 0)
			p, doubt, unexplained = nil, false, 0
		case Duplicate:
			// All of recs, not only this batch: the write applied may have
			// been a larger one, cut in halves after its outcome was lost.
			n, changed, rerr := b.resolve(ctx, g, st, p, doubt, tag, recs)
			if rerr != nil {
				return out, rerr
			}
			if n > 0 {
				// An earlier attempt of this write (or of a larger one
				// that held it) was applied.
				out.Stored += n
				recs = recs[n:]
				suspect = max(suspect-n, 0)
				doubt, unexplained = false, 0
			} else if !changed {
				// Nothing explains the collision with the bucket as
				// read: another unique index refuses this content.
				if unexplained++; unexplained >= 2 {
					class = Poison
					break
				}
			}
			p = nil
		case Conflict, Transient:
			doubt = doubt || class == Transient
			attempt++
			if werr := b.retry.Wait(ctx, attempt); werr != nil {
				return out, fmt.Errorf("writing bucket %s: %w", bucketer.BucketID(g.ID, p.seq), err)
			}
		}
		if class == Poison {
			if p.n > 1 {
				suspect = max(suspect, p.n)
				limit = (p.n + 1) / 2
				p = nil
			} else {
				park("refused by MongoDB: " + err.Error())
			}
		}
	}
	return out, nil
}

// resolve reads the bucket a write of p missed and updates st to it; on a
// group this process has not seen yet, the group's newest bucket, so that a
// restart does not walk up to it. When the bucket holds a write of this
// chunk at p.count, an earlier attempt of p (whose outcome was unknown) was
// applied: resolve compares the entries and returns how many of recs, in
// order, it stored. With doubt the first read brings the entries along.
// changed reports whether the bucket differs from what p assumed.
func (b *Buckets) resolve(ctx context.Context, g *bucketer.Group, st *groupState, p *part, doubt bool, tag uint32, recs []*parser.Record) (applied int, changed bool, err error) {
	id := bucketer.BucketID(g.ID, p.seq)
	var doc bson.Raw
	if !st.known && !doubt {
		doc, err = b.findOne(ctx, g, b.groupFilter(g), Query{Projection: fillProjection, Sort: bySeqDesc, Limit: 1})
	} else {
		q := Query{Projection: fillProjection}
		if doubt {
			q.Projection = entriesProjection
		}
		doc, err = b.findOne(ctx, g, idFilter(id), q)
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading bucket %s: %w", id, err)
	}
	st.seq, st.count, st.bytes, st.known = p.seq, 0, 0, true
	if doc == nil {
		return 0, p.count != 0, nil
	}
	if s, ok := doc.Lookup("seq").AsInt64OK(); ok {
		st.seq = int(s)
	}
	st.count, st.bytes = fill(doc)
	if st.seq == p.seq && b.cfg.Idempotent && tagAt(doc, p.count, tag) {
		if _, ok := doc.Lookup("logs").ArrayOK(); !ok {
			if doc, err = b.findOne(ctx, g, idFilter(id), Query{Projection: entriesProjection}); err != nil || doc == nil {
				return 0, true, err
			}
		}
		applied = appliedAt(doc, p.count, tag, recs)
	}
	return applied, st.seq != p.seq || st.count != p.count, nil
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
			AppendInt32("bytes", 1).AppendInt32("ops", 1).Build())
	entriesProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("seq", 1).AppendInt32("count", 1).
				AppendInt32("bytes", 1).AppendInt32("ops", 1).AppendInt32("logs", 1).Build())
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

// filter is the update filter of part p: the bucket, in the state p assumes.
func (b *Buckets) filter(g *bucketer.Group, p *part) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", bucketer.BucketID(g.ID, p.seq)).
		AppendInt32("count", int32(p.count)).Build())
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

	inc, dst := bsoncore.AppendDocumentElementStart(dst, "$inc")
	dst = bsoncore.AppendInt32Element(dst, "count", int32(p.n))
	dst = bsoncore.AppendInt64Element(dst, "bytes", int64(size))
	for _, s := range sum.Stats {
		if s.Float {
			dst = bsoncore.AppendDoubleElement(dst, "stats."+s.Field+".sum", s.Sum)
		} else {
			dst = bsoncore.AppendInt64Element(dst, "stats."+s.Field+".sum", s.IntSum)
		}
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
	if b.cfg.TTL > 0 {
		// A windowed bucket expires TTL after its window ends; one without
		// a window, TTL after its newest entry.
		base := g.End
		if base.IsZero() {
			base = sum.MaxTs
		}
		dst = bsoncore.AppendTimeElement(dst, "expireAt", base.Add(b.cfg.TTL+Jitter(g.ID, b.cfg.TTLJitter)))
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

// Jitter is a duration in [0, max) fixed by id, so every write of one
// document, and every retry, computes the same expiry.
func Jitter(id string, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(max))
}
