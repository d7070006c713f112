// Package sink is the plugin's core: it turns one Fluent Bit chunk into
// MongoDB writes and says whether the chunk is done or must be retried. It
// knows nothing of cgo or Fluent Bit's return codes.
package sink

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer/errclass"
)

// Mode is how records are stored.
type Mode string

const (
	ModeBucket Mode = "bucket" // many records per document
	ModeFlat   Mode = "flat"   // one document per record
)

// Options configure a Sink.
type Options struct {
	Mode       Mode
	Collection string
	DeadLetter string
	TagKey     string
	Idempotent bool
	// MaxInflight bounds the write commands the sink has in flight at
	// once, over all its flushes.
	MaxInflight int
	// WriteBatch is the most bucket writes sent in one command.
	WriteBatch   int
	FlushTimeout time.Duration
	// Expiry gives documents their expireAt when on.
	Expiry     layout.Expiry
	Decoder    parser.Options
	Grouper    bucketer.Config
	MaxRecords int // per bucket
	MaxBytes   int // per bucket
	// Partitions, when its Period is set, sends each record to the
	// partition of its time (Base is Collection). With Keep, records
	// older than the kept range are parked, not written into a partition
	// that is about to be dropped.
	Partitions layout.Partitions
	// Now is the clock partition retention reads; nil means time.Now.
	Now func() time.Time
	// OnWrite, if set, is called with +1 when a write command starts and
	// -1 when it ends (for metrics).
	OnWrite func(delta int)
	// Setup prepares a collection (indexes, capping, TTL) before its first
	// write, the dead-letter collection included; nil means nothing to do.
	// An error is logged and the write goes on, unless it is a
	// *layout.Required error or a passing one (errclass.Kind.Passing: no
	// answer, an election): then the chunk is retried, and the next flush
	// runs Setup again.
	Setup func(ctx context.Context, coll string) error
}

// Logger receives the sink's log lines.
type Logger interface {
	Debugf(format string, args ...any)
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Status is the outcome of a flush.
type Status int

const (
	// Done: every record is stored or parked in the dead-letter collection.
	Done Status = iota
	// Retry: give the chunk back; resending it adds nothing twice.
	Retry
)

func (s Status) String() string { return [...]string{"done", "retry"}[s] }

// Result is the outcome of one flush.
type Result struct {
	Status  Status
	Err     error
	Records int // records in the chunk
	// New: no earlier attempt of the chunk ended in Retry in this process,
	// so its records are counted as received now.
	New    bool
	Stored int // records stored by this flush (earlier attempts of the chunk not counted)
	// Found: records this flush found stored that this process had not
	// counted as stored: written by an earlier process, or by an earlier
	// attempt whose reply was lost. For a chunk that ends Done, Stored and
	// Found over its attempts plus Parked is Records.
	Found   int
	Parked  int // records parked in the dead-letter collection (0 unless Done)
	Groups  int // bucket groups touched
	Created int // buckets this flush created
}

// maxRemembered bounds how many unfinished chunks' unstorable records are
// remembered, so that a retried chunk does not isolate them again.
const maxRemembered = 256

// Sink writes chunks. It is safe for concurrent use.
type Sink struct {
	opt     Options
	store   writer.Store
	dec     *parser.Decoder
	buckets *writer.Buckets
	retry   writer.Retry
	log     Logger

	mu sync.Mutex
	// unfinished holds what the last flush of a chunk that did not finish
	// learnt. It only saves work: what is not remembered is found again.
	unfinished *bounded[*memo]
	flushing   map[string]*chunkLock // chunks being flushed, by id
	contents   *contents             // what is known of the contents flushed
	batches    sync.Pool
	totals     Totals
	ready      sync.Map // collections Setup has prepared
}

// Totals are counters since start. A chunk and its records count once,
// however many attempts it takes; Retries counts the attempts that ended
// in Retry.
type Totals struct {
	Chunks, Records, Stored, Found, Parked, Retries, ParseFailures int64
}

// New builds a sink. It does no I/O.
func New(opt Options, store writer.Store, retry writer.Retry, log Logger) (*Sink, error) {
	if opt.Mode == ModeFlat {
		opt.Decoder.Reserved = append(opt.Decoder.Reserved, "_id", opt.TagKey)
	}
	if opt.Mode == ModeBucket && opt.Decoder.MaxRecordBytes == 0 {
		opt.Decoder.MaxRecordBytes = opt.MaxBytes
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	dec, err := parser.NewDecoder(opt.Decoder)
	if err != nil {
		return nil, err
	}
	store = &limited{Store: store, slots: make(chan struct{}, max(opt.MaxInflight, 1)), onWrite: opt.OnWrite}
	s := &Sink{opt: opt, store: store, dec: dec, retry: retry, log: log,
		unfinished: newBounded[*memo](maxRemembered), flushing: map[string]*chunkLock{},
		contents: newContents(maxContents)}
	s.buckets = writer.NewBuckets(store, writer.BucketConfig{
		Collection: opt.Collection, MaxRecords: opt.MaxRecords, MaxBytes: opt.MaxBytes,
		Idempotent: opt.Idempotent, WriteBatch: opt.WriteBatch, Expiry: opt.Expiry,
	}, &s.opt.Grouper, retry)
	s.batches.New = func() any { return new(parser.Batch) }
	return s, nil
}

// Flush stores one chunk.
func (s *Sink) Flush(ctx context.Context, tag string, chunk []byte) Result {
	ctx, cancel := context.WithTimeout(ctx, s.opt.FlushTimeout)
	defer cancel()
	batch := s.batches.Get().(*parser.Batch)
	defer s.batches.Put(batch)
	var content string
	if s.opt.Mode == ModeFlat {
		// Flat documents' ids derive from the chunk's id.
		content = ChunkID(tag, chunk)
		s.dec.Decode(chunk, s.flatPrefix(content, tag), batch)
	} else {
		// Bucket entries do not need the chunk id: hash while decoding.
		ids := make(chan string, 1)
		go func() { ids <- ChunkID(tag, chunk) }()
		s.dec.Decode(chunk, nil, batch)
		content = <-ids
	}
	res := Result{Records: len(batch.Records) + len(batch.Bad)}
	defer s.lockChunk(content)()
	occ, known := s.contents.get(content)
	res.New = !occ.retried
	occ.newest = newestTime(batch)
	// probe: the generation to complete is the newest one stored, which
	// this process does not know yet.
	probe := !known || occ.probing
	var f *flush
	var err error
	for {
		f, err = s.flushGen(ctx, content, occ.gen, tag, batch, &res)
		if err != nil || !probe || !f.found {
			break
		}
		// Something of this generation was stored already: a later one
		// may be the one an earlier process was writing.
		var later bool
		if later, err = s.holds(ctx, content, occ.gen+1, tag, batch); err != nil || !later {
			break
		}
		// The chunk's records are those of the later generation: what
		// this one was found holding is not theirs.
		occ.gen++
		res.Found = 0
	}
	if err != nil {
		res.Parked = 0
	}
	s.account(batch, &res, err)
	if err != nil {
		occ.retried, occ.probing = true, probe
		s.contents.put(content, occ)
		s.remember(f.id, &memo{parked: f.parked, limits: f.limits, drops: f.drops, accounted: f.accounted})
		res.Status, res.Err = Retry, err
		s.log.Warnf("chunk %s (tag %q, %d records) will be retried: %v", f.id, tag, res.Records, err)
		return res
	}
	s.contents.put(content, occurrence{gen: occ.gen + 1, newest: occ.newest})
	s.remember(f.id, nil)
	s.log.Debugf("chunk %s (tag %q): %d records, %d stored, %d already stored, %d parked, %d groups", f.id, tag, res.Records, res.Stored, res.Found, res.Parked, res.Groups)
	return res
}

// flushGen writes generation gen of a chunk's content: what earlier
// attempts of it did not store.
func (s *Sink) flushGen(ctx context.Context, content string, gen int, tag string, batch *parser.Batch, res *Result) (*flush, error) {
	id := GenID(content, gen)
	if gen > 0 && s.opt.Mode == ModeFlat {
		s.reid(batch, id)
	}
	f := &flush{id: id, tag: tag, batch: batch, prev: s.remembered(id), limits: map[string]int{}, drops: map[int]int{}}
	var err error
	stored := res.Stored
	if s.opt.Mode == ModeFlat {
		err = s.writeFlat(ctx, f, res)
	} else {
		err = s.writeBuckets(ctx, f, res)
	}
	// What was found stored counts once: not what earlier attempts in
	// this process counted already.
	found := max(0, f.storedBefore-f.prev.accounted)
	res.Found += found
	f.accounted = f.prev.accounted + found + res.Stored - stored
	if err == nil {
		err = s.park(ctx, f, res)
	}
	return f, err
}

// flush is one attempt at one chunk.
type flush struct {
	id, tag string
	batch   *parser.Batch
	prev    *memo
	parked  []writer.Parked
	limits  map[string]int // see memo
	drops   map[int]int    // see memo
	// found: some of the records were stored by an earlier attempt (in
	// this process or an earlier one); storedBefore counts those records.
	found        bool
	storedBefore int
	// accounted counts the records this process has counted as stored or
	// found, over this attempt and the earlier ones (see memo).
	accounted int
}

// memo is what an unfinished flush of a chunk learnt: the records it found
// unstorable, where the search for them stood (the write size it had come
// down to, by collection and group id), the connections a record written
// alone had lost in a row (by record index; see writer.Dropped), and how
// many of its records the totals count as stored or found already.
type memo struct {
	parked    []writer.Parked
	limits    map[string]int
	drops     map[int]int
	accounted int
	known     map[int]string // parked by record index
}

// pending returns the records of recs to write, parking those an earlier
// attempt found unstorable.
func (f *flush) pending(recs []*parser.Record, stored map[int]bool) []*parser.Record {
	if len(stored) == 0 && len(f.prev.known) == 0 {
		return recs
	}
	out := make([]*parser.Record, 0, len(recs))
	for _, r := range recs {
		switch {
		case stored[r.Index]:
		case f.prev.known[r.Index] != "":
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: f.prev.known[r.Index]})
		default:
			out = append(out, r)
		}
	}
	return out
}

// account adds a flush to the totals: a chunk and its records once, at
// its first attempt; what each attempt stored and parked.
func (s *Sink) account(b *parser.Batch, res *Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.New {
		s.totals.Chunks++
		s.totals.Records += int64(res.Records)
		s.totals.ParseFailures += int64(b.ParseFailures)
	}
	s.totals.Stored += int64(res.Stored)
	s.totals.Found += int64(res.Found)
	s.totals.Parked += int64(res.Parked)
	if err != nil {
		s.totals.Retries++
	}
	if b.ParseFailures > 0 && res.New {
		s.log.Warnf("%d records did not match parser; stored with their raw line and _parse_error", b.ParseFailures)
	}
}

// CapWriteBatch lowers the bucket writes per command to n, for a server
// that cannot take more.
func (s *Sink) CapWriteBatch(n int) { s.buckets.CapBatch(n) }

// Totals returns the counters since start.
func (s *Sink) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

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

// bounded maps chunk ids to values, keeping at most max of them: putting
// one more forgets the oldest.
type bounded[V any] struct {
	max   int
	by    map[string]V
	order []string // oldest first
}

func newBounded[V any](max int) *bounded[V] { return &bounded[V]{max: max, by: map[string]V{}} }

func (b *bounded[V]) get(id string) (V, bool) {
	v, ok := b.by[id]
	return v, ok
}

// put adds id, which must not be there.
func (b *bounded[V]) put(id string, v V) {
	if len(b.order) >= b.max {
		delete(b.by, b.order[0])
		b.order = b.order[1:]
	}
	b.by[id] = v
	b.order = append(b.order, id)
}

func (b *bounded[V]) drop(id string) {
	if _, ok := b.by[id]; ok {
		delete(b.by, id)
		b.order = slices.DeleteFunc(b.order, func(o string) bool { return o == id })
	}
}

// route splits records by the collection they go to, in order of first
// appearance. With partition_keep, records older than the kept range (at
// the time of the flush) are parked instead: their partition is dropped,
// or about to be.
func (s *Sink) route(f *flush) (colls []string, parts [][]parser.Record) {
	recs := f.batch.Records
	p := s.opt.Partitions
	if p.Period == layout.None {
		return []string{s.opt.Collection}, [][]parser.Record{recs}
	}
	p.Base = s.opt.Collection
	oldest := p.Oldest(s.opt.Now())
	at := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Time.Before(oldest) {
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: fmt.Sprintf(
				"older than the partitions kept: partition_keep %d keeps %s and later", p.Keep, p.Collection(oldest))})
			continue
		}
		c := p.Collection(r.Time)
		j, ok := at[c]
		if !ok {
			j = len(colls)
			at[c] = j
			colls = append(colls, c)
			parts = append(parts, nil)
		}
		parts[j] = append(parts[j], *r)
	}
	return colls, parts
}

// setupRetry is how long a collection whose Setup failed (without holding
// up writes) waits before Setup is tried again.
const setupRetry = 5 * time.Minute

// prepare runs Setup once per collection. s.ready holds true for a prepared
// collection, or the time of a failed attempt.
func (s *Sink) prepare(ctx context.Context, coll string) error {
	if s.opt.Setup == nil {
		return nil
	}
	if v, ok := s.ready.Load(coll); ok {
		if failed, ok := v.(time.Time); !ok || time.Since(failed) < setupRetry {
			return nil
		}
	}
	err := s.opt.Setup(ctx, coll)
	var required *layout.Required
	switch {
	case err == nil:
		s.ready.Store(coll, true)
	case errors.As(err, &required):
		return err
	case errclass.Of(err).Passing():
		// Not a refusal: the server did not answer, or answered "not now"
		// (an election). The chunk waits, and the next flush sets the
		// collection up before writing.
		return fmt.Errorf("preparing collection %s: %w", coll, err)
	default:
		s.ready.Store(coll, time.Now())
		s.log.Warnf("preparing collection %s: %v (writing anyway; tried again in %v)", coll, err, setupRetry)
	}
	return nil
}

// writeBuckets writes the chunk's groups after one read for what earlier
// attempts of the chunk stored.
func (s *Sink) writeBuckets(ctx context.Context, f *flush, res *Result) error {
	var groups []*bucketer.Group
	colls, parts := s.route(f)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll); err != nil {
			return err
		}
		groups = append(groups, s.groupsIn(coll, f.tag, parts[i])...)
	}
	res.Groups = len(groups)
	// Stored is read under the groups' locks (see Buckets.Write): the
	// records to write are decided there.
	var jobs []writer.Job
	var outs []writer.Outcome
	err := errclass.Guard(func() (err error) {
		outs, err = s.buckets.Write(ctx, f.id, groups, func(stored map[int]bool) []writer.Job {
			f.found, f.storedBefore = len(stored) > 0, len(stored)
			for _, g := range groups {
				if todo := f.pending(g.Records, stored); len(todo) > 0 {
					jobs = append(jobs, writer.Job{Group: g, Recs: todo, Limit: f.prev.limits[groupKey(g)], Drops: f.prev.drops})
				}
			}
			return jobs
		})
		return err
	})
	for i, o := range outs {
		res.Stored += o.Stored
		res.Created += o.Created
		f.parked = append(f.parked, o.Poison...)
		if o.Limit > 0 {
			f.limits[groupKey(jobs[i].Group)] = o.Limit
		}
		maps.Copy(f.drops, o.Drops)
	}
	return err
}

// groupsIn groups the records of tag that go to collection coll.
func (s *Sink) groupsIn(coll, tag string, recs []parser.Record) []*bucketer.Group {
	groups := s.opt.Grouper.Group(tag, recs)
	for _, g := range groups {
		g.Collection = coll
	}
	return groups
}

// groupKey names a group in memo.limits.
func groupKey(g *bucketer.Group) string { return g.Collection + "\x00" + g.ID }

// limited is a Store that has at most cap(slots) write commands in flight.
type limited struct {
	writer.Store
	slots   chan struct{}
	onWrite func(delta int)
}

func (l *limited) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		if l.onWrite != nil {
			l.onWrite(1)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limited) release() {
	if l.onWrite != nil {
		l.onWrite(-1)
	}
	<-l.slots
}

func (l *limited) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	if err := l.acquire(ctx); err != nil {
		return slices.Repeat([]error{err}, len(ups))
	}
	defer l.release()
	return l.Store.Upserts(ctx, coll, ups)
}

func (l *limited) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	return l.Store.InsertMany(ctx, coll, docs)
}

// flatPrefix gives each flat document a deterministic ObjectID (the record's
// time in seconds, then 8 bytes derived from the chunk id and the record
// index) and the tag.
func (s *Sink) flatPrefix(id, tag string) parser.Prefix {
	seed := flatSeed(id)
	return func(dst []byte, idx int, t time.Time) []byte {
		var oid [12]byte
		binary.BigEndian.PutUint32(oid[:4], uint32(t.Unix()))
		binary.BigEndian.PutUint64(oid[4:], splitmix(seed+uint64(idx)))
		dst = bsoncore.AppendObjectIDElement(dst, "_id", oid)
		dst = bsoncore.AppendStringElement(dst, s.opt.TagKey, tag)
		if s.opt.Expiry.On() {
			// Filled in by expire once the record's fields and time are known.
			dst = bsoncore.AppendTimeElement(dst, layout.ExpireField, time.Time{})
		}
		return dst
	}
}

// flatSeed is what the ids of a flat chunk's documents derive from.
func flatSeed(id string) uint64 {
	raw, _ := hex.DecodeString(id[:16])
	return binary.BigEndian.Uint64(raw)
}

// reid gives the flat documents of b the ids of chunk id, in place: their
// time part stays, the rest derives from id as flatPrefix does.
func (s *Sink) reid(b *parser.Batch, id string) {
	seed := flatSeed(id)
	for i := range b.Records {
		r := &b.Records[i]
		if v, err := r.Doc.LookupErr("_id"); err == nil && v.Type == bsoncore.TypeObjectID {
			binary.BigEndian.PutUint64(v.Data[4:], splitmix(seed+uint64(r.Index)))
		}
	}
}

// holds reports whether anything of generation gen of a content is
// stored: in its buckets or flat documents, or in the dead letters.
func (s *Sink) holds(ctx context.Context, content string, gen int, tag string, batch *parser.Batch) (bool, error) {
	id := GenID(content, gen)
	f := &flush{id: id, tag: tag, batch: batch, prev: &memo{}, limits: map[string]int{}}
	colls, parts := s.route(f)
	if s.opt.Mode == ModeFlat {
		s.reid(batch, id)
	}
	for i, coll := range colls {
		if s.opt.Mode == ModeFlat {
			ids := make([]bsoncore.Value, len(parts[i]))
			for j := range parts[i] {
				ids[j] = parts[i][j].Doc.Lookup("_id")
			}
			if n, err := writer.Existing(ctx, s.store, coll, ids, s.retry); err != nil || n > 0 {
				return n > 0, err
			}
			continue
		}
		stored, err := s.buckets.Stored(ctx, id, s.groupsIn(coll, tag, parts[i]))
		if err != nil || len(stored) > 0 {
			return len(stored) > 0, err
		}
	}
	lo, hi := id+":", id+";" // dead-letter ids are id:key
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument("_id", bsoncore.NewDocumentBuilder().
		AppendString("$gte", lo).AppendString("$lt", hi).Build()).Build())
	var docs []bson.Raw
	err := s.retry.Do(ctx, func() (err error) {
		docs, err = s.store.Find(ctx, s.opt.DeadLetter, filter, writer.Query{Projection: writer.IDProjection, Limit: 1})
		return err
	})
	return len(docs) > 0, err
}

// expire fills in the expireAt of a flat document, which depends on its
// fields (ttl_rules) and its time (which the line may have set).
func (s *Sink) expire(r *parser.Record) {
	if !s.opt.Expiry.On() {
		return
	}
	oid, ok := r.Doc.Lookup("_id").ObjectIDOK()
	v, err := r.Doc.LookupErr(layout.ExpireField)
	if !ok || err != nil || v.Type != bsoncore.TypeDateTime {
		return
	}
	binary.LittleEndian.PutUint64(v.Data, uint64(s.opt.Expiry.Flat(oid, r.Time, r.Doc).UnixMilli()))
}

// splitmix is a bijective 64-bit mix: distinct inputs give distinct ids.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// writeFlat inserts one document per record.
func (s *Sink) writeFlat(ctx context.Context, f *flush, res *Result) error {
	colls, parts := s.route(f)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll); err != nil {
			return err
		}
		all := make([]*parser.Record, len(parts[i]))
		for j := range parts[i] {
			all[j] = &parts[i][j]
		}
		recs := f.pending(all, nil)
		docs := make([]writer.Doc, len(recs))
		for j, r := range recs {
			s.expire(r)
			docs[j] = writer.Doc{ID: r.Doc.Lookup("_id"), Raw: bson.Raw(r.Doc)}
		}
		drops := map[int]int{} // by index in docs
		for j, r := range recs {
			if d := f.prev.drops[r.Index]; d > 0 {
				drops[j] = d
			}
		}
		ins, err := writer.InsertAll(ctx, s.store, coll, docs, s.retry, f.prev.limits[coll], drops)
		refused := ins.Refused
		if ins.Limit > 0 {
			f.limits[coll] = ins.Limit
		}
		for j, d := range ins.Drops {
			f.drops[recs[j].Index] = d
		}
		f.found = f.found || ins.Existed > 0
		f.storedBefore += ins.Existed
		for _, r := range refused {
			f.parked = append(f.parked, writer.Parked{Index: recs[r.Index].Index, Reason: r.Reason})
		}
		if err != nil {
			return err
		}
		res.Stored += len(docs) - len(refused) - ins.Existed
	}
	return nil
}

// maxParkedRaw bounds the raw bytes kept of one parked record, so the
// dead-letter document stays far below MongoDB's 16 MiB limit.
const maxParkedRaw = 1 << 20

// reducedRaw is the raw bytes kept of a record whose whole dead-letter
// document the server refused.
const reducedRaw = 1 << 10

// letter is one record to park.
type letter struct {
	key, reason, format string
	t                   time.Time
	raw                 []byte
}

// park stores the records that cannot be stored normally in the
// dead-letter collection, each with its reason. A dead-letter document the
// server refuses is stored reduced (reason, sizes, the first bytes); if
// even that is refused, the chunk is retried: nothing is dropped.
func (s *Sink) park(ctx context.Context, f *flush, res *Result) error {
	b := f.batch
	var letters []letter
	for _, bad := range b.Bad {
		letters = append(letters, letter{fmt.Sprint(bad.Index), bad.Reason, "msgpack", bad.Time, bad.Raw})
	}
	if len(f.parked) > 0 {
		byIndex := make(map[int]*parser.Record, len(b.Records))
		for i := range b.Records {
			byIndex[b.Records[i].Index] = &b.Records[i]
		}
		for _, p := range f.parked {
			if r := byIndex[p.Index]; r != nil {
				letters = append(letters, letter{fmt.Sprint(p.Index), p.Reason, "bson", r.Time, r.Doc})
			}
		}
	}
	if c := b.Corrupt; c != nil {
		letters = append(letters, letter{fmt.Sprintf("corrupt@%d", c.Offset), c.Error(), "msgpack", time.Time{}, b.Rest})
	}
	res.Parked = len(letters)
	if len(letters) == 0 {
		return nil
	}
	if err := s.prepare(ctx, s.opt.DeadLetter); err != nil {
		return err
	}
	now := time.Now().UTC()
	docs := make([]writer.Doc, len(letters))
	for i, l := range letters {
		docs[i] = s.deadLetter(f, l, now, maxParkedRaw, "")
	}
	ins, err := writer.InsertAll(ctx, s.store, s.opt.DeadLetter, docs, s.retry, 0, nil)
	if err != nil {
		return fmt.Errorf("parking %d records: %w", len(letters), err)
	}
	f.found = f.found || ins.Existed > 0
	if refused := ins.Refused; len(refused) > 0 {
		reduced := make([]writer.Doc, len(refused))
		for i, r := range refused {
			reduced[i] = s.deadLetter(f, letters[r.Index], now, reducedRaw, r.Reason)
		}
		again, err := writer.InsertAll(ctx, s.store, s.opt.DeadLetter, reduced, s.retry, 0, nil)
		if err != nil {
			return fmt.Errorf("parking %d reduced records: %w", len(reduced), err)
		}
		f.found = f.found || again.Existed > 0
		if len(again.Refused) > 0 {
			return fmt.Errorf("dead-letter collection %s refuses even a reduced record: %s", s.opt.DeadLetter, again.Refused[0].Reason)
		}
		s.log.Warnf("dead-letter collection %s refused %d records whole (first: %s); stored them reduced to their reason, sizes and first %d bytes",
			s.opt.DeadLetter, len(refused), refused[0].Reason, reducedRaw)
	}
	s.log.Warnf("chunk %s (tag %q): %d records parked in %s (first reason: %s)", f.id, f.tag, len(letters), s.opt.DeadLetter, letters[0].reason)
	return nil
}

// deadLetter is the dead-letter document of l, keeping at most limit raw
// bytes. refused, when set, is why the server refused the whole document;
// the reduced document then has only valid UTF-8 strings of bounded size.
func (s *Sink) deadLetter(f *flush, l letter, now time.Time, limit int, refused string) writer.Doc {
	text := func(v string) string { return v }
	if refused != "" {
		text = func(v string) string {
			if len(v) > reducedRaw {
				v = v[:reducedRaw]
			}
			return strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	docID := f.id + ":" + l.key
	d := bsoncore.NewDocumentBuilder().
		AppendString("_id", docID).
		AppendString(s.opt.TagKey, text(f.tag)).
		AppendString("reason", text(l.reason)).
		AppendString("chunk", f.id).
		AppendDateTime("parkedAt", now.UnixMilli())
	if !l.t.IsZero() {
		d.AppendDateTime(s.opt.Decoder.TimeKey, l.t.UnixMilli())
	}
	d.AppendString("format", l.format).AppendInt64("size", int64(len(l.raw)))
	raw := l.raw
	if len(raw) > limit {
		raw = raw[:limit]
		d.AppendBoolean("truncated", true)
	}
	if refused != "" {
		d.AppendString("refused", text(refused))
	}
	d.AppendBinary("raw", 0, raw)
	return writer.Doc{ID: bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, docID)}, Raw: bson.Raw(d.Build())}
}
