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
	known bool          // its buckets were read once
	seq   int           // the bucket being filled
	count int           // its entries, as far as known
	bytes int           // its bytes counter, as far as known
	// prior maps "chunk:index" to the number of records that a write of
	// this process's predecessors stored (read from the ops arrays), so a
	// chunk resent after a restart is not stored twice.
	prior map[string]int
	// recent lists the keys this process added to prior itself, oldest
	// first, so that they stay bounded (see remember).
	recent []string
}

// maxRecent bounds the writes of this process a group remembers in prior.
const maxRecent = 128

// remember records that this process stored the write of n records
// starting at key, so that the same chunk sent again (Fluent Bit resends a
// chunk whose acknowledgement it lost) is recognised as it is after a
// restart, from the ops read by load.
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

// part is one write: n records into bucket seq, with operation id op.
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

// OpID names the write of n records starting at chunk record index idx.
func OpID(chunkID string, idx, n int) string {
	return chunkID + ":" + strconv.Itoa(idx) + ":" + strconv.Itoa(n)
}

func opKey(chunkID string, idx int) string {
	return chunkID + ":" + strconv.Itoa(idx)
}

// Write stores the records of g that prog has not handled yet. It returns
// nil when every record is stored or parked in prog.Poison, and an error
// (with prog updated) when the flush must be retried.
func (b *Buckets) Write(ctx context.Context, chunkID string, g *bucketer.Group, prog *Progress) error {
	coll := b.collection(g)
	st, err := b.acquire(ctx, coll+"\x00"+g.ID)
	if err != nil {
		return err
	}
	defer st.release()
	if !st.known {
		if err := b.retry.Do(ctx, func() error { return b.load(ctx, coll, g.ID, st) }); err != nil {
			return fmt.Errorf("reading buckets of %s: %w", g.ID, err)
		}
	}
	extra := len(b.grouper.CountBy) * 160
	header := b.header(g)
	recs := g.Records
	races, attempt := 0, 0
	for prog.Done < len(recs) {
		rest := recs[prog.Done:]
		if n, ok := st.prior[opKey(chunkID, rest[0].Index)]; ok && prog.doubt == nil {
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
				st.seq, st.count, st.bytes = st.seq+1, 0, 0
				continue
			}
			p = &part{seq: st.seq, n: k, op: OpID(chunkID, rest[0].Index, k)}
		}
		sum := b.grouper.Summarize(rest[:p.n])
		size := sum.Bytes + p.n*extra + opBytes(chunkID)
		err := b.upsert(ctx, g, p, rest[:p.n], sum, size, header)
		class := Classify(err)
		if class == Duplicate {
			class, err = b.duplicate(ctx, g, st, p)
			if class == Duplicate {
				if races++; races > 5 {
					// Not our document, or it keeps changing: move on.
					st.seq, st.count, st.bytes = st.seq+1, 0, 0
					races = 0
				}
			}
		}
		switch class {
		case OK:
			if p.seq == st.seq {
				st.count += p.n
				st.bytes += size
			}
			if b.cfg.Idempotent {
				st.remember(opKey(chunkID, rest[0].Index), p.n)
			}
			prog.Done += p.n
			prog.Stored += p.n
			prog.single = max(prog.single-p.n, 0)
			prog.doubt = nil
			races, attempt = 0, 0
		case Duplicate:
			prog.doubt = nil
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

// opBytes is what one operation id adds to the ops array.
func opBytes(chunkID string) int {
	return len(chunkID) + 24
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

// duplicate handles an upsert that hit an existing bucket: it reads the
// bucket to tell "already written" (OK) from "full" and "created
// concurrently" (Duplicate: plan again with the state it read).
func (b *Buckets) duplicate(ctx context.Context, g *bucketer.Group, st *groupState, p *part) (Class, error) {
	var info *bucketInfo
	err := b.retry.Do(ctx, func() error {
		var err error
		info, err = b.read(ctx, b.collection(g), bucketer.BucketID(g.ID, p.seq))
		return err
	})
	if err != nil {
		return Transient, err
	}
	if info == nil {
		return Duplicate, nil // removed meanwhile: write again
	}
	if info.hasOp(p.op) {
		return OK, nil
	}
	if p.seq == st.seq {
		// Full, or created concurrently: plan again with what is stored.
		st.count, st.bytes = info.count, info.bytes
	}
	return Duplicate, nil
}

type bucketInfo struct {
	seq          int
	count, bytes int
	ops          []string
}

func (i *bucketInfo) hasOp(op string) bool {
	for _, o := range i.ops {
		if o == op {
			return true
		}
	}
	return false
}

var infoProjection = bson.Raw(bsoncore.NewDocumentBuilder().
	AppendInt32("count", 1).AppendInt32("bytes", 1).AppendInt32("ops", 1).Build())

func (b *Buckets) read(ctx context.Context, coll, id string) (*bucketInfo, error) {
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", id).Build())
	docs, err := b.store.Find(ctx, coll, filter, infoProjection)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return parseInfo(docs[0]), nil
}

// load reads every bucket of group id once, learning which bucket is being
// filled and which operations are already stored.
func (b *Buckets) load(ctx context.Context, coll, id string, st *groupState) error {
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument("_id",
		bsoncore.NewDocumentBuilder().AppendString("$regex", "^"+id+"-").Build()).Build())
	docs, err := b.store.Find(ctx, coll, filter, infoProjection)
	if err != nil {
		return err
	}
	st.known = true
	for _, d := range docs {
		info := parseInfo(d)
		if info.seq >= st.seq {
			st.seq, st.count, st.bytes = info.seq, info.count, info.bytes
		}
		for _, op := range info.ops {
			i := strings.LastIndexByte(op, ':')
			n, err := strconv.Atoi(op[i+1:])
			if i < 0 || err != nil {
				continue
			}
			if st.prior == nil {
				st.prior = map[string]int{}
			}
			st.prior[op[:i]] = n
		}
	}
	return nil
}

func parseInfo(d bson.Raw) *bucketInfo {
	info := &bucketInfo{}
	if id, ok := d.Lookup("_id").StringValueOK(); ok {
		if i := strings.LastIndexByte(id, '-'); i >= 0 {
			info.seq, _ = strconv.Atoi(id[i+1:])
		}
	}
	info.count = int(numberOf(d.Lookup("count")))
	info.bytes = int(numberOf(d.Lookup("bytes")))
	if arr, ok := d.Lookup("ops").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok {
				info.ops = append(info.ops, s)
			}
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

// upsert writes part p (records recs) into its bucket.
func (b *Buckets) upsert(ctx context.Context, g *bucketer.Group, p *part, recs []*parser.Record, sum bucketer.Summary, size, header int) error {
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
