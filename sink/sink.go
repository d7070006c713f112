// Package sink is the plugin's core: it turns one Fluent Bit chunk into
// MongoDB writes and says whether the chunk is done or must be retried. It
// knows nothing of cgo or Fluent Bit's return codes.
package sink

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// Options configure a Sink.
type Options struct {
	Mode       model.Mode
	Collection string
	DeadLetter string
	TagKey     string
	// IDKey, in flat mode, is the top-level field whose value becomes a
	// document's _id (see ownIDs); IDReplace makes a repeat of a stored
	// _id replace the document instead of counting as stored.
	IDKey      string
	IDReplace  bool
	Idempotent bool
	// Agent names the agent in every chunk id (see ChunkID): a chunk with
	// the bytes of one another agent stored is not this agent's resend.
	Agent string
	// MaxInflight bounds the write commands the sink has in flight at
	// once, over all its flushes.
	MaxInflight int
	// WriteBatch is the most bucket writes sent in one command.
	WriteBatch   int
	FlushTimeout time.Duration
	// Expiry gives documents their expireAt when on.
	Expiry layout.Expiry
	// Decoder and Grouper: the grouper's TagKey, ReplaceDot and
	// ReplaceDollar are taken from TagKey and the decoder's, so that the
	// two never disagree.
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
	// *layout.Required error or a passing one (errkind.Kind.Passing: no
	// answer, an election): then the chunk is retried, and the next flush
	// runs Setup again.
	Setup func(ctx context.Context, coll string, deadLetter bool) error
	// Targets, when set, name each record's collection and dead-letter
	// collection from its tag and fields, in place of Collection and
	// DeadLetter.
	Targets *Targets
	// OutagesReported: the caller logs when no server can be reached
	// (errkind.NoServer), once per outage; a chunk given back for that
	// is then logged at debug, not at warn with the driver's long error.
	OutagesReported bool
	// Limits bound what the process remembers; zero fields take the
	// defaults. The simulator lowers them so that forgetting is reached.
	Limits Limits
}

// Limits bound what a sink remembers between flushes.
type Limits struct {
	Contents   int // contents known (default maxContents)
	Unfinished int // unfinished chunks' memos (default maxRemembered)
	Groups     int // bucket groups' states (default writer's)
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
	// Overflowed: records sent to an overflow target (see Targets.Limit);
	// counted at the chunk's first attempt only, as Records is.
	Overflowed int
}

// Sink writes chunks. It is safe for concurrent use.
type Sink struct {
	opt     Options
	router  *router // nil: every record goes to Collection
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
	// version is the last version a replacement was written with (see
	// nextVersion).
	version   int64
	ready     sync.Map // collections Setup has prepared
	preparing sync.Map // a *sync.Mutex per collection, held while Setup runs
}

// Totals are counters since start. A chunk and its records count once,
// however many attempts it takes; Retries counts the attempts that ended
// in Retry.
type Totals struct {
	Chunks, Records, Stored, Found, Parked, Retries, ParseFailures, Overflowed int64
}

// New builds a sink. It does no I/O.
func New(opt Options, store writer.Store, retry writer.Retry, log Logger) (*Sink, error) {
	opt.Grouper.TagKey = opt.TagKey
	opt.Grouper.ReplaceDot, opt.Grouper.ReplaceDollar = opt.Decoder.ReplaceDot, opt.Decoder.ReplaceDollar
	if opt.Mode == model.ModeFlat {
		opt.Decoder.Reserved = append(opt.Decoder.Reserved, model.ID, opt.TagKey)
	} else if opt.IDKey != "" {
		return nil, fmt.Errorf("id_key %q needs mode flat", opt.IDKey)
	}
	if opt.Mode == model.ModeBucket && opt.Decoder.MaxRecordBytes == 0 {
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
	s := &Sink{opt: opt, router: newRouter(opt.Targets), store: store, dec: dec, retry: retry, log: log,
		unfinished: newBounded[*memo](cmp.Or(opt.Limits.Unfinished, maxRemembered)), flushing: map[string]*chunkLock{},
		contents: newContents(cmp.Or(opt.Limits.Contents, maxContents))}
	s.buckets = writer.NewBuckets(store, writer.BucketConfig{
		Collection: opt.Collection, MaxRecords: opt.MaxRecords, MaxBytes: opt.MaxBytes,
		Idempotent: opt.Idempotent, WriteBatch: opt.WriteBatch, Expiry: opt.Expiry, MaxGroups: opt.Limits.Groups,
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
	if s.opt.Mode == model.ModeFlat {
		// Flat documents' ids derive from the chunk's id.
		content = ChunkID(s.opt.Agent, tag, chunk)
		s.dec.Decode(chunk, s.flatPrefix(content, tag), batch)
		s.ownIDs(batch)
	} else {
		// Bucket entries do not need the chunk id: hash while decoding.
		ids := make(chan string, 1)
		go func() { ids <- ChunkID(s.opt.Agent, tag, chunk) }()
		s.dec.Decode(chunk, nil, batch)
		content = <-ids
	}
	res := Result{Records: len(batch.Records) + len(batch.Bad)}
	if s.router != nil {
		if err := s.router.openExisting(ctx, s.log); err != nil {
			s.account(batch, &res, err)
			res.Status, res.Err = Retry, err
			s.retrying(err, "chunk (tag %q, %d records) will be retried: %v", tag, res.Records, err)
			return res
		}
	}
	defer s.lockChunk(content)()
	occ, known := s.contents.get(content)
	res.New = !occ.retried
	dests := s.dests(tag, batch, &res)
	occ.newest = newestTime(batch)
	// probe: the generation to complete is the newest one stored, which
	// this process does not know yet.
	probe := !known || occ.probing
	var f *flush
	var err error
	if !known && s.contents.forgot(content) {
		// This process answered Done for the content and forgot it: the
		// chunk is a new one, of the generation after the newest stored.
		if occ.gen, err = s.nextGen(ctx, content, tag, batch, dests); err != nil {
			s.account(batch, &res, err)
			res.Status, res.Err = Retry, err
			s.retrying(err, "chunk (tag %q, %d records) will be retried: %v", tag, res.Records, err)
			return res
		}
		probe = false
	}
	for {
		f, err = s.flushGen(ctx, content, occ.gen, occ.retried, probe, tag, batch, dests, &res)
		if err != nil || !probe || !f.found {
			break
		}
		// Something of this generation was stored already: a later one
		// may be the one an earlier process was writing.
		var later bool
		if later, err = s.holds(ctx, content, occ.gen+1, tag, batch, dests); err != nil || !later {
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
		s.remember(f.id, &memo{parked: f.parkedSoFar(), limits: f.limits, drops: f.drops, accounted: f.accounted})
		res.Status, res.Err = Retry, err
		s.retrying(err, "chunk %s (tag %q, %d records) will be retried: %v", f.id, tag, res.Records, err)
		return res
	}
	s.contents.put(content, occurrence{gen: occ.gen + 1, newest: occ.newest})
	s.remember(f.id, nil)
	s.log.Debugf("chunk %s (tag %q): %d records, %d stored, %d already stored, %d parked, %d groups", f.id, tag, res.Records, res.Stored, res.Found, res.Parked, res.Groups)
	return res
}

// retrying logs a chunk given back for err: at warn, or at debug when
// the caller reports the outage err is part of.
func (s *Sink) retrying(err error, format string, args ...any) {
	if s.opt.OutagesReported && errkind.NoServer(err) {
		s.log.Debugf(format, args...)
		return
	}
	s.log.Warnf(format, args...)
}

// nextGen is the generation after the newest one of content stored.
func (s *Sink) nextGen(ctx context.Context, content, tag string, batch *parser.Batch, dests *routes) (int, error) {
	for gen := 0; ; gen++ {
		held, err := s.holds(ctx, content, gen, tag, batch, dests)
		if err != nil || !held {
			return gen, err
		}
	}
}

// flushGen writes generation gen of a chunk's content: what earlier
// attempts of it did not store. retried: an earlier attempt in this
// process ended in Retry, and its writes are fenced before the look.
// Records an earlier attempt parked are read from the dead letters and
// parked again, not written, whatever this process remembers of them: in
// a retry, and, in bucket mode, in a content this process does not know
// (probe: an earlier process may have parked them; in flat mode the
// stand-in a parked record leaves under its _id tells).
func (s *Sink) flushGen(ctx context.Context, content string, gen int, retried, probe bool, tag string, batch *parser.Batch, dests *routes, res *Result) (*flush, error) {
	id := GenID(content, gen)
	if gen > 0 && s.opt.Mode == model.ModeFlat {
		s.reid(batch, id)
	}
	f := &flush{id: id, tag: tag, batch: batch, dests: dests, prev: s.remembered(id), limits: map[string]int{}, drops: map[int]int{},
		retried: retried}
	if retried || probe && s.opt.Mode == model.ModeBucket {
		if err := s.parkedBefore(ctx, f); err != nil {
			return f, err
		}
	}
	var err error
	stored := res.Stored
	if s.opt.Mode == model.ModeFlat {
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
	s.totals.Overflowed += int64(res.Overflowed)
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
