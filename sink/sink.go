// Package sink is the plugin's core: it turns one Fluent Bit chunk into
// MongoDB writes and says whether the chunk is done or must be retried. It
// knows nothing of cgo or Fluent Bit's return codes.
package sink

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// Mode is how records are stored.
type Mode string

const (
	ModeBucket Mode = "bucket" // many records per document
	ModeFlat   Mode = "flat"   // one document per record
)

// Options configure a Sink.
type Options struct {
	Mode         Mode
	Collection   string
	DeadLetter   string
	TagKey       string
	Idempotent   bool
	MaxInflight  int
	FlushTimeout time.Duration
	TTL          time.Duration
	TTLJitter    time.Duration
	Decoder      parser.Options
	Grouper      bucketer.Config
	MaxRecords   int // per bucket
	MaxBytes     int // per bucket
	// Partition is the time layout of partitioned collection names
	// (Collection + "_" + the record's UTC time in this layout, e.g.
	// "20060102"); empty means one collection.
	Partition string
	// Setup prepares a collection (indexes, capping) before its first
	// write; nil means nothing to do. An error is logged and the write goes
	// on, unless it is a *SetupRequired error: then the chunk is retried.
	Setup func(ctx context.Context, coll string) error
}

// SetupRequired is a Setup error that must hold up writes to the collection
// (a capped collection must exist before the first insert creates it
// uncapped).
type SetupRequired struct{ Err error }

func (e *SetupRequired) Error() string { return e.Err.Error() }
func (e *SetupRequired) Unwrap() error { return e.Err }

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
	Stored  int // records stored by this flush (earlier attempts of the chunk not counted)
	Parked  int // records parked in the dead-letter collection
	Groups  int // bucket groups touched
}

// maxProgress bounds how many retried chunks' progress is remembered.
const maxProgress = 256

// Sink writes chunks. It is safe for concurrent use.
type Sink struct {
	opt     Options
	store   writer.Store
	dec     *parser.Decoder
	buckets *writer.Buckets
	retry   writer.Retry
	log     Logger

	mu       sync.Mutex
	progress map[string]*chunkProgress
	order    []string
	batches  sync.Pool
	totals   Totals
	ready    sync.Map // collections Setup has prepared
}

// Totals are counters since start.
type Totals struct {
	Chunks, Records, Stored, Parked, Retries, ParseFailures int64
}

// chunkProgress is what earlier attempts of one chunk achieved.
type chunkProgress struct {
	mu       sync.Mutex                  // one flush of the chunk at a time
	groups   map[string]*writer.Progress // by collection and group id
	flatDone map[string]bool             // by collection
	deadDone bool
	poison   []writer.Parked
}

// New builds a sink. It does no I/O.
func New(opt Options, store writer.Store, retry writer.Retry, log Logger) (*Sink, error) {
	if opt.Mode == ModeFlat {
		opt.Decoder.Reserved = append(opt.Decoder.Reserved, "_id", opt.TagKey)
	}
	if opt.Mode == ModeBucket && opt.Decoder.MaxRecordBytes == 0 {
		opt.Decoder.MaxRecordBytes = opt.MaxBytes
	}
	dec, err := parser.NewDecoder(opt.Decoder)
	if err != nil {
		return nil, err
	}
	s := &Sink{opt: opt, store: store, dec: dec, retry: retry, log: log, progress: map[string]*chunkProgress{}}
	s.buckets = writer.NewBuckets(store, writer.BucketConfig{
		Collection: opt.Collection, MaxRecords: opt.MaxRecords, MaxBytes: opt.MaxBytes,
		Idempotent: opt.Idempotent, TTL: opt.TTL, TTLJitter: opt.TTLJitter,
	}, &s.opt.Grouper, retry)
	s.batches.New = func() any { return new(parser.Batch) }
	return s, nil
}

// ChunkID identifies a chunk by its tag and bytes: Fluent Bit resends the
// identical bytes when a flush is retried.
func ChunkID(tag string, chunk []byte) string {
	h := sha256.New()
	h.Write([]byte(tag))
	h.Write([]byte{0})
	h.Write(chunk)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Flush stores one chunk.
func (s *Sink) Flush(ctx context.Context, tag string, chunk []byte) Result {
	ctx, cancel := context.WithTimeout(ctx, s.opt.FlushTimeout)
	defer cancel()
	batch := s.batches.Get().(*parser.Batch)
	defer s.batches.Put(batch)
	var id string
	if s.opt.Mode == ModeFlat {
		// Flat documents' ids derive from the chunk id.
		id = ChunkID(tag, chunk)
		s.dec.Decode(chunk, s.flatPrefix(id, tag), batch)
	} else {
		// Bucket entries do not need the chunk id: hash while decoding.
		ids := make(chan string, 1)
		go func() { ids <- ChunkID(tag, chunk) }()
		s.dec.Decode(chunk, nil, batch)
		id = <-ids
	}
	res := Result{Records: len(batch.Records) + len(batch.Bad)}
	prog := s.progressOf(id)
	prog.mu.Lock()
	defer prog.mu.Unlock()

	var err error
	if s.opt.Mode == ModeFlat {
		err = s.writeFlat(ctx, batch, prog, &res)
	} else {
		err = s.writeBuckets(ctx, id, tag, batch, prog, &res)
	}
	if err == nil {
		err = s.park(ctx, id, tag, batch, prog, &res)
	}
	s.account(batch, &res, err)
	if err != nil {
		res.Status, res.Err = Retry, err
		s.log.Warnf("chunk %s (tag %q, %d records) will be retried: %v", id, tag, res.Records, err)
		return res
	}
	s.forget(id)
	s.log.Debugf("chunk %s (tag %q): %d records, %d stored, %d parked, %d groups", id, tag, res.Records, res.Stored, res.Parked, res.Groups)
	return res
}

func (s *Sink) account(b *parser.Batch, res *Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totals.Chunks++
	s.totals.Records += int64(res.Records)
	s.totals.Stored += int64(res.Stored)
	s.totals.Parked += int64(res.Parked)
	s.totals.ParseFailures += int64(b.ParseFailures)
	if err != nil {
		s.totals.Retries++
	}
	if b.ParseFailures > 0 {
		s.log.Warnf("%d records did not match parser; stored with their raw line and _parse_error", b.ParseFailures)
	}
}

// Totals returns the counters since start.
func (s *Sink) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

func (s *Sink) progressOf(id string) *chunkProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.progress[id]; p != nil {
		return p
	}
	if len(s.order) >= maxProgress {
		delete(s.progress, s.order[0])
		s.order = s.order[1:]
	}
	p := &chunkProgress{groups: map[string]*writer.Progress{}, flatDone: map[string]bool{}}
	s.progress[id] = p
	s.order = append(s.order, id)
	return p
}

func (s *Sink) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.progress, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// partitions splits records by the collection they go to, in order of
// first appearance.
func (s *Sink) partitions(recs []parser.Record) (colls []string, parts [][]parser.Record) {
	if s.opt.Partition == "" {
		return []string{s.opt.Collection}, [][]parser.Record{recs}
	}
	at := map[string]int{}
	for _, r := range recs {
		c := s.opt.Collection + "_" + r.Time.UTC().Format(s.opt.Partition)
		i, ok := at[c]
		if !ok {
			i = len(colls)
			at[c] = i
			colls = append(colls, c)
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], r)
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
	var required *SetupRequired
	switch {
	case err == nil:
		s.ready.Store(coll, true)
	case errors.As(err, &required):
		return err
	default:
		s.ready.Store(coll, time.Now())
		s.log.Warnf("preparing collection %s: %v (writing anyway; tried again in %v)", coll, err, setupRetry)
	}
	return nil
}

// writeBuckets writes the chunk's groups, up to MaxInflight at once.
func (s *Sink) writeBuckets(ctx context.Context, id, tag string, b *parser.Batch, prog *chunkProgress, res *Result) error {
	var groups []*bucketer.Group
	colls, parts := s.partitions(b.Records)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll); err != nil {
			return err
		}
		for _, g := range s.opt.Grouper.Group(tag, parts[i]) {
			g.Collection = coll
			groups = append(groups, g)
		}
	}
	res.Groups = len(groups)
	sem := make(chan struct{}, max(s.opt.MaxInflight, 1))
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	progs := make([]*writer.Progress, len(groups))
	stored := 0 // by earlier attempts of the chunk
	for i, g := range groups {
		key := g.Collection + "\x00" + g.ID
		p := prog.groups[key]
		if p == nil {
			p = &writer.Progress{}
			prog.groups[key] = p
		}
		progs[i] = p
		stored += p.Stored
		if p.Done == len(g.Records) {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = guard(func() error { return s.buckets.Write(ctx, id, g, p) })
		}()
	}
	wg.Wait()
	prog.poison = prog.poison[:0]
	res.Stored = -stored
	for _, p := range progs {
		res.Stored += p.Stored
		prog.poison = append(prog.poison, p.Poison...)
	}
	return errors.Join(errs...)
}

// guard runs fn and turns a panic into an error, so a bug below a flush
// goroutine costs a retry of the chunk, not the agent.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

// flatPrefix gives each flat document a deterministic ObjectID (the record's
// time in seconds, then 8 bytes derived from the chunk id and the record
// index) and the tag.
func (s *Sink) flatPrefix(id, tag string) parser.Prefix {
	raw, _ := hex.DecodeString(id[:16])
	seed := binary.BigEndian.Uint64(raw)
	return func(dst []byte, idx int, t time.Time) []byte {
		var oid [12]byte
		binary.BigEndian.PutUint32(oid[:4], uint32(t.Unix()))
		binary.BigEndian.PutUint64(oid[4:], splitmix(seed+uint64(idx)))
		dst = bsoncore.AppendObjectIDElement(dst, "_id", oid)
		dst = bsoncore.AppendStringElement(dst, s.opt.TagKey, tag)
		if s.opt.TTL > 0 {
			jitter := writer.Jitter(string(oid[:]), s.opt.TTLJitter)
			dst = bsoncore.AppendTimeElement(dst, "expireAt", t.Add(s.opt.TTL+jitter))
		}
		return dst
	}
}

// splitmix is a bijective 64-bit mix: distinct inputs give distinct ids.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// writeFlat inserts one document per record.
func (s *Sink) writeFlat(ctx context.Context, b *parser.Batch, prog *chunkProgress, res *Result) error {
	colls, parts := s.partitions(b.Records)
	for i, coll := range colls {
		recs := parts[i]
		if prog.flatDone[coll] {
			continue
		}
		if err := s.prepare(ctx, coll); err != nil {
			return err
		}
		docs := make([]writer.Doc, len(recs))
		for j := range recs {
			d := recs[j].Doc
			docs[j] = writer.Doc{ID: d.Lookup("_id"), Raw: bson.Raw(d)}
		}
		refused, err := writer.InsertAll(ctx, s.store, coll, docs, s.retry)
		if err != nil {
			return err
		}
		prog.flatDone[coll] = true
		for _, r := range refused {
			prog.poison = append(prog.poison, writer.Parked{Index: recs[r.Index].Index, Reason: r.Reason})
		}
		res.Stored += len(docs) - len(refused)
	}
	return nil
}

// maxParkedRaw bounds the raw bytes kept of one parked record, so the
// dead-letter document stays far below MongoDB's 16 MiB limit.
const maxParkedRaw = 1 << 20

// park stores the records that cannot be stored normally in the dead-letter
// collection, each with its reason.
func (s *Sink) park(ctx context.Context, id, tag string, b *parser.Batch, prog *chunkProgress, res *Result) error {
	n := len(b.Bad) + len(prog.poison)
	if b.Corrupt != nil {
		n++
	}
	if n == 0 || prog.deadDone {
		res.Parked = n
		return nil
	}
	now := time.Now().UTC()
	docs := make([]writer.Doc, 0, n)
	add := func(key string, t time.Time, reason, format string, raw []byte) {
		docID := id + ":" + key
		d := bsoncore.NewDocumentBuilder().
			AppendString("_id", docID).
			AppendString(s.opt.TagKey, tag).
			AppendString("reason", reason).
			AppendString("chunk", id).
			AppendDateTime("parkedAt", now.UnixMilli())
		if !t.IsZero() {
			d.AppendDateTime(s.opt.Decoder.TimeKey, t.UnixMilli())
		}
		d.AppendString("format", format).AppendInt64("size", int64(len(raw)))
		if len(raw) > maxParkedRaw {
			raw = raw[:maxParkedRaw]
			d.AppendBoolean("truncated", true)
		}
		d.AppendBinary("raw", 0, raw)
		docs = append(docs, writer.Doc{ID: bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, docID)}, Raw: bson.Raw(d.Build())})
	}
	for _, bad := range b.Bad {
		add(fmt.Sprint(bad.Index), bad.Time, bad.Reason, "msgpack", bad.Raw)
	}
	if len(prog.poison) > 0 {
		byIndex := make(map[int]*parser.Record, len(b.Records))
		for i := range b.Records {
			byIndex[b.Records[i].Index] = &b.Records[i]
		}
		for _, p := range prog.poison {
			if r := byIndex[p.Index]; r != nil {
				add(fmt.Sprint(p.Index), r.Time, p.Reason, "bson", r.Doc)
			}
		}
	}
	if c := b.Corrupt; c != nil {
		add(fmt.Sprintf("corrupt@%d", c.Offset), time.Time{}, c.Error(), "msgpack", b.Rest)
	}
	refused, err := writer.InsertAll(ctx, s.store, s.opt.DeadLetter, docs, s.retry)
	if err != nil {
		return fmt.Errorf("parking %d records: %w", n, err)
	}
	if len(refused) > 0 {
		// The dead-letter collection itself refuses them: nothing is left
		// to try, and retrying would block the pipeline for ever.
		s.log.Errorf("dead-letter collection %s refused %d records, dropped: %s", s.opt.DeadLetter, len(refused), refused[0].Reason)
	}
	prog.deadDone = true
	res.Parked = n
	s.log.Warnf("chunk %s (tag %q): %d records parked in %s (first reason: %s)", id, tag, n, s.opt.DeadLetter, firstReason(b, prog))
	return nil
}

func firstReason(b *parser.Batch, prog *chunkProgress) string {
	switch {
	case len(b.Bad) > 0:
		return b.Bad[0].Reason
	case len(prog.poison) > 0:
		return prog.poison[0].Reason
	case b.Corrupt != nil:
		return b.Corrupt.Error()
	}
	return ""
}
