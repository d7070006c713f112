package writer

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
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
	// Idempotent records an operation id per write in the bucket's ops
	// array and guards on it, so a resent chunk adds nothing twice.
	Idempotent bool
	// TTL, when set, gives each bucket an expireAt of its newest entry's
	// time + TTL + a jitter in [0, TTLJitter) fixed per bucket.
	TTL, TTLJitter time.Duration
}

// Buckets writes groups of records into bucket documents with atomic
// upserts. It is safe for concurrent use; writes to one group are
// serialised, writes to different groups run in parallel.
type Buckets struct {
	store   Store
	cfg     BucketConfig
	grouper *bucketer.Config
	retry   Retry

	mu     sync.Mutex
	groups map[string]*groupState
	tick   uint64
}

// groupState is what this process knows of one group's buckets.
type groupState struct {
	lock  chan struct{} // held while a write to the group is in flight
	used  uint64        // for eviction: the tick of the last use
	seq   int           // the bucket being filled
	count int           // its entries, as far as known
	bytes int           // its bytes counter, as far as known
	// created: this process created bucket seq, so every write in it is
	// one this process made; read: its ops were read. A bucket that is
	// neither is read before the writer moves past it.
	created, read bool
	// prior maps an operation key ("chunk:index") to the number of records
	// that write stored, for writes known to be in the group's buckets: read
	// from the ops of buckets this process read (writes of an earlier run of
	// the agent, before a restart) and this process's own recent writes. A
	// chunk sent again skips them.
	prior map[string]int
	// recent lists the keys this process added to prior itself, oldest
	// first, so that they stay bounded (see remember).
	recent []string
}

// maxRecent bounds the writes of this process a group remembers in prior.
const maxRecent = 128

// remember records that this process stored the write of n records
// starting at key, so that the same chunk sent again (Fluent Bit resends a
// chunk whose acknowledgement it lost) is recognised.
func (st *groupState) remember(key string, n int) {
	if st.prior == nil {
		st.prior = map[string]int{}
	}
	if _, ok := st.prior[key]; !ok {
		st.recent = append(st.recent, key)
		if len(st.recent) > maxRecent {
			delete(st.prior, st.recent[0])
			st.recent = st.recent[1:]
		}
	}
	st.prior[key] = n
}

// learn records what a read of bucket seq showed: the writes it holds and,
// for the bucket being filled, its fill.
func (st *groupState) learn(info *bucketInfo) {
	for i, op := range info.ops {
		if i < len(info.opn) {
			if st.prior == nil {
				st.prior = map[string]int{}
			}
			st.prior[op] = info.opn[i]
		}
	}
	if info.seq == st.seq {
		st.count, st.bytes, st.read = info.count, info.bytes, true
	}
}

// next moves on to the next bucket of the group.
func (st *groupState) next() {
	st.seq, st.count, st.bytes, st.created, st.read = st.seq+1, 0, 0, false, false
}

// Progress is what one chunk has achieved in one group. The caller keeps it
// across retries of the chunk.
type Progress struct {
	Done   int // records of the group handled, a prefix of its records
	Stored int // of them, stored by this process
	Poison []Parked
	doubt  *part // a write whose outcome is unknown, to be repeated as is
	single int   // records to write one at a time, after a poison error
}

// Parked is a record that cannot be stored, with the reason. Index is the
// record's index in its chunk.
type Parked struct {
	Index  int
	Reason string
}

// part is one write: n records into bucket seq, with operation key op
// ("chunk:index" of its first record).
type part struct {
	seq int
	n   int
	op  string
}

// NewBuckets returns a bucket writer.
func NewBuckets(store Store, cfg BucketConfig, grouper *bucketer.Config, retry Retry) *Buckets {
	return &Buckets{store: store, cfg: cfg, grouper: grouper, retry: retry, groups: map[string]*groupState{}}
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

// opKey names a write by its chunk and the index of its first record. The
// guard on it in every bucket write means: no write of this chunk that
// starts at this record is in the bucket, whatever its length.
func opKey(chunkID string, idx int) string {
	return chunkID + ":" + strconv.Itoa(idx)
}

// Write stores the records of g that prog has not handled yet. It returns
// nil when every record is stored or parked in prog.Poison, and an error
// (with prog updated) when the flush must be retried.
//
// A group this process has not written yet starts at bucket 0 and walks up:
// an upsert into a bucket that is full, or that already holds this write,
// collides with its _id (DuplicateKey), and the writer reads the bucket. The
// buckets it passes are read or were created by itself, so any write of an
// earlier run of the agent is found before it could be stored twice. The
// common case, a new window, costs one round trip per bucket.
func (b *Buckets) Write(ctx context.Context, chunkID string, g *bucketer.Group, prog *Progress) error {
	coll := b.collection(g)
	st, err := b.acquire(ctx, coll+"\x00"+g.ID)
	if err != nil {
		return err
	}
	defer st.release()
	extra := len(b.grouper.CountBy) * 160
	header := b.header(g)
	recs := g.Records
	races, attempt := 0, 0
	for prog.Done < len(recs) {
		rest := recs[prog.Done:]
		key := opKey(chunkID, rest[0].Index)
		if n, ok := st.prior[key]; ok && prog.doubt == nil {
			prog.Done += min(n, len(rest))
			continue
		}
		p := prog.doubt
		if p == nil {
			room := b.cfg.MaxRecords - st.count
			if prog.single > 0 {
				room = min(room, 1)
			}
			k := bucketer.Fit(rest, room, b.cfg.MaxBytes-header-st.bytes-opBytes(chunkID), extra)
			if k == 0 {
				if st.count == 0 {
					prog.Poison = append(prog.Poison, Parked{rest[0].Index, fmt.Sprintf(
						"record of %d bytes does not fit in an empty bucket (bucket_max_bytes %d)", len(rest[0].Doc), b.cfg.MaxBytes)})
					prog.Done++
					continue
				}
				if !st.created && !st.read && b.cfg.Idempotent {
					if err := b.readInto(ctx, g, st, st.seq); err != nil {
						return err
					}
					continue
				}
				st.next()
				continue
			}
			p = &part{seq: st.seq, n: k, op: key}
		}
		sum := b.grouper.Summarize(rest[:p.n])
		size := sum.Bytes + p.n*extra + opBytes(chunkID)
		created, err := b.upsert(ctx, g, p, rest[:p.n], sum, size, header)
		class := Classify(err)
		n, counted := p.n, false
		if class == Duplicate {
			if rerr := b.readInto(ctx, g, st, p.seq); rerr != nil {
				class, err = Transient, rerr
			} else if stored, ok := st.prior[p.op]; ok && b.cfg.Idempotent {
				// The bucket holds this write: an earlier attempt (or an
				// earlier run) stored it, perhaps with another length.
				class, n, created, counted = OK, stored, false, true
			} else if races++; races > 5 {
				// Not our document, or it keeps changing: move on.
				st.next()
				races = 0
			}
		}
		switch class {
		case OK:
			if p.seq == st.seq && !counted { // a read has counted it already
				st.count += n
				st.bytes += size
				st.created = st.created || created
			}
			if b.cfg.Idempotent {
				st.remember(p.op, n)
			}
			prog.Done += n
			prog.Stored += n
			prog.single = max(prog.single-n, 0)
			prog.doubt = nil
			races, attempt = 0, 0
		case Duplicate:
			prog.doubt = nil // not applied: plan again with what was read
		case Conflict, Transient:
			prog.doubt = p
			attempt++
			if werr := b.retry.Wait(ctx, attempt); werr != nil {
				return fmt.Errorf("writing bucket %s: %w", bucketer.BucketID(g.ID, p.seq), err)
			}
		case Poison:
			prog.doubt = nil
			if p.n > 1 {
				prog.single = p.n
			} else {
				prog.Poison = append(prog.Poison, Parked{rest[0].Index, "refused by MongoDB: " + err.Error()})
				prog.Done++
				prog.single = max(prog.single-1, 0)
			}
		}
	}
	return nil
}

func (b *Buckets) collection(g *bucketer.Group) string {
	if g.Collection != "" {
		return g.Collection
	}
	return b.cfg.Collection
}

// opBytes is the most one operation adds to the ops and opn arrays.
func opBytes(chunkID string) int {
	return len(chunkID) + 32
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

// readInto reads bucket seq of g and records what it holds in st; a bucket
// that does not exist (any more) reads as empty.
func (b *Buckets) readInto(ctx context.Context, g *bucketer.Group, st *groupState, seq int) error {
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", bucketer.BucketID(g.ID, seq)).Build())
	var docs []bson.Raw
	err := b.retry.Do(ctx, func() error {
		var err error
		docs, err = b.store.Find(ctx, b.collection(g), filter, infoProjection)
		return err
	})
	if err != nil {
		return fmt.Errorf("reading bucket %s: %w", bucketer.BucketID(g.ID, seq), err)
	}
	info := &bucketInfo{seq: seq}
	if len(docs) > 0 {
		info = parseInfo(docs[0], seq)
	}
	st.learn(info)
	return nil
}

// bucketInfo is what a read of one bucket shows.
type bucketInfo struct {
	seq          int
	count, bytes int
	ops          []string // operation keys
	opn          []int    // records each operation stored
}

var infoProjection = bson.Raw(bsoncore.NewDocumentBuilder().
	AppendInt32("count", 1).AppendInt32("bytes", 1).AppendInt32("ops", 1).AppendInt32("opn", 1).Build())

func parseInfo(d bson.Raw, seq int) *bucketInfo {
	info := &bucketInfo{seq: seq}
	info.count = int(numberOf(d.Lookup("count")))
	info.bytes = int(numberOf(d.Lookup("bytes")))
	if arr, ok := d.Lookup("ops").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			s, _ := v.StringValueOK()
			info.ops = append(info.ops, s)
		}
	}
	if arr, ok := d.Lookup("opn").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			info.opn = append(info.opn, int(numberOf(v)))
		}
	}
	return info
}

func numberOf(v bson.RawValue) int64 {
	if i, ok := v.AsInt64OK(); ok {
		return i
	}
	return 0
}

// upsert writes part p (records recs) into its bucket and reports whether
// the write created it.
func (b *Buckets) upsert(ctx context.Context, g *bucketer.Group, p *part, recs []*parser.Record, sum bucketer.Summary, size, header int) (bool, error) {
	id := bucketer.BucketID(g.ID, p.seq)
	f := bsoncore.NewDocumentBuilder().AppendString("_id", id).
		AppendDocument("count", bsoncore.NewDocumentBuilder().AppendInt32("$lte", int32(b.cfg.MaxRecords-p.n)).Build()).
		AppendDocument("bytes", bsoncore.NewDocumentBuilder().AppendInt64("$lte", int64(b.cfg.MaxBytes-header-size)).Build())
	if b.cfg.Idempotent {
		f.AppendDocument("ops", bsoncore.NewDocumentBuilder().AppendString("$ne", p.op).Build())
	}
	return b.store.Upsert(ctx, b.collection(g), bson.Raw(f.Build()), b.update(g, p, recs, sum, size))
}

// update builds the update document of one write.
func (b *Buckets) update(g *bucketer.Group, p *part, recs []*parser.Record, sum bucketer.Summary, size int) bson.Raw {
	dst := make([]byte, 0, sum.Bytes+1024)
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
		dst = bsoncore.AppendStringElement(dst, "ops", p.op)
		dst = bsoncore.AppendInt32Element(dst, "opn", int32(p.n))
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
