package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The workload: agents running Fluent Bit's side of the contract. Each
// agent has chunks to deliver and a few workers; a chunk answered Retry is
// flushed again later with the same bytes until it is answered Done, and
// one answered Done is never flushed again. An agent's process can be
// killed: its memory is lost, its commands in flight stay in the network,
// and a new process resends the chunks that were in flight.

// Marks in a record's message that make the server model refuse it.
const (
	// poisonMark: the server refuses every write holding the record
	// (BadValue), as MongoDB refuses content it cannot store.
	poisonMark = "POISON-MARK"
	// chokeMark: the server closes the connection on every command
	// holding the record and answers everything else, as some
	// MongoDB-compatible servers do on values they do not support.
	chokeMark = "CHOKE-MARK"
	// holdMark: the network cuts every write holding the record and
	// delivers it to the server later, answering everything else (a
	// proxy that holds writes of one shape).
	holdMark = "HOLD-MARK"
)

// content is a chunk's bytes: what Fluent Bit hands the plugin.
type content struct {
	n     int // the content's number in the run
	tag   string
	bytes []byte
	rids  []string // each record's rid, in chunk order
	eids  []string // each record's own id (id_key), or ""
}

// lastOf is the rid of the last record of content c with own id eid: the
// one its flush writes (see sink.sortFlat), or "".
func (c *content) lastOf(eid string) string {
	for i := len(c.eids) - 1; i >= 0; i-- {
		if c.eids[i] == eid {
			return c.rids[i]
		}
	}
	return ""
}

// chunkState is where a chunk is in Fluent Bit's hands.
type chunkState uint8

const (
	queued   chunkState = iota // waiting for a flush (from due on)
	flushing                   // a worker is flushing it
	acked                      // answered Done: never flushed again
	excluded                   // left out (see run.excluded)
)

// chunk is one chunk of one agent.
type chunk struct {
	n        int
	agent    *agent
	content  *content
	state    chunkState
	due      time.Time
	attempts int
	by       *process // the process flushing it
	// flushedBy: the processes that started a flush of it.
	flushedBy map[*process]bool
	// started: the step its last flush started at; ackedAt: the step its
	// answer Done was taken at.
	started, ackedAt int
}

// agent is one Fluent Bit with the plugin: an identity, its current
// process, its chunks.
type agent struct {
	n       int
	id      string // sink.Options.Agent: the identity its chunks are named by
	proc    *process
	procs   int // processes started
	workers int
	chunks  []*chunk
}

// process is one run of an agent's plugin: a sink with its memory.
type process struct {
	name   string
	agent  *agent
	sink   *sink.Sink
	ctx    context.Context
	cancel context.CancelFunc
	killed atomic.Bool
}

func (p *process) dead() bool { return p.killed.Load() }

// busy counts the agent's flushes under way in its current process.
func (a *agent) busy() int {
	n := 0
	for _, c := range a.chunks {
		if c.state == flushing && c.by == a.proc {
			n++
		}
	}
	return n
}

// flushed is a flush's outcome, reported by the flushing goroutine.
type flushed struct {
	c    *chunk
	proc *process
	res  sink.Result
}

// outcomes collects flushes' outcomes from their goroutines.
type outcomes struct {
	mu   sync.Mutex
	list []flushed
}

func (o *outcomes) add(f flushed) {
	o.mu.Lock()
	o.list = append(o.list, f)
	o.mu.Unlock()
}

// take returns the outcomes reported since the last take, by chunk: the
// flushes that end at one instant report in the Go scheduler's order.
func (o *outcomes) take() []flushed {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.list
	o.list = nil
	slices.SortFunc(l, func(a, b flushed) int { return a.c.n - b.c.n })
	return l
}

// makeContents draws the run's chunk contents: fresh ones, and some
// byte-identical to an earlier one (a line repeated within the resolution
// of its time), of the same agent or of another.
func makeContents(rng, ids *rand.Rand, cfg *Config, t0 time.Time) [][]*content {
	var all []*content
	per := make([][]*content, cfg.Agents)
	n := 0
	for range cfg.Agents * cfg.Chunks {
		a := rng.IntN(cfg.Agents)
		if len(all) > 0 && rng.Float64() < cfg.Identical {
			c := all[rng.IntN(len(all))]
			per[a] = append(per[a], c)
			continue
		}
		c := newContent(rng, ids, cfg, n, t0)
		n++
		all = append(all, c)
		per[a] = append(per[a], c)
	}
	return per
}

// newContent draws one chunk: records of a few modules, some repeated
// within the chunk, times mostly increasing and some late; with IDKey,
// two records in three carry an event id drawn from ids (a stream of its
// own), each a new version of the event.
func newContent(rng, ids *rand.Rand, cfg *Config, n int, t0 time.Time) *content {
	c := &content{n: n, tag: fmt.Sprintf("app.%d", rng.IntN(2))}
	recs := 1 + rng.IntN(cfg.MaxChunkRecords)
	base := t0.Add(time.Duration(n) * cfg.Spacing)
	if rng.Float64() < 0.1 {
		base = base.Add(-time.Duration(rng.IntN(3)+1) * time.Hour) // a late chunk
	}
	var buf []byte
	var prev []byte
	for i := range recs {
		rid := fmt.Sprintf("c%d.%d", n, i)
		if prev != nil && rng.Float64() < cfg.Repeats {
			buf = append(buf, prev...) // the same line again
			c.rids = append(c.rids, c.rids[len(c.rids)-1])
			c.eids = append(c.eids, c.eids[len(c.eids)-1])
			continue
		}
		msg := strings.Repeat("x", rng.IntN(cfg.MaxMessage))
		switch r := rng.Float64(); {
		case r < cfg.Poison:
			msg = poisonMark + msg
		case r < cfg.Poison+cfg.Choke:
			msg = chokeMark + msg
		case r < cfg.Poison+cfg.Choke+cfg.Hold:
			msg = holdMark + msg
		}
		t := base.Add(time.Duration(i)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
		rec := map[string]any{"rid": rid, "mod": fmt.Sprintf("m%d", rng.IntN(cfg.Modules)), "msg": msg}
		eid := ""
		if cfg.IDKey && ids.IntN(3) > 0 {
			eid = fmt.Sprintf("e%d", ids.IntN(cfg.Events))
			rec[idField] = eid
		}
		prev = event(t, rec)
		buf = append(buf, prev...)
		c.rids = append(c.rids, rid)
		c.eids = append(c.eids, eid)
	}
	c.bytes = buf
	return c
}

// event encodes one Fluent Bit event: [[EventTime, {}], record].
func event(t time.Time, rec map[string]any) []byte {
	var et [8]byte
	s, ns := uint32(t.Unix()), uint32(t.Nanosecond())
	et[0], et[1], et[2], et[3] = byte(s>>24), byte(s>>16), byte(s>>8), byte(s)
	et[4], et[5], et[6], et[7] = byte(ns>>24), byte(ns>>16), byte(ns>>8), byte(ns)
	var b strings.Builder
	enc := msgpack.NewEncoder(&b)
	enc.SetSortMapKeys(true)
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeArrayLen(2)
	_ = enc.EncodeExtHeader(0, 8)
	b.Write(et[:])
	_ = enc.EncodeMapLen(0)
	_ = enc.Encode(rec)
	return []byte(b.String())
}

// sinkOptions are the plugin's settings for cfg, as the instance builds
// them from a configuration.
func sinkOptions(cfg *Config, agentID string) sink.Options {
	opt := sink.Options{
		Mode: cfg.Mode, Collection: collection, DeadLetter: deadLetters, TagKey: "tag",
		Idempotent: true, Agent: agentID,
		// Enough for every command of the run at once: the order of
		// commands waiting for a slot would be the Go scheduler's.
		MaxInflight:  1 << 10,
		WriteBatch:   cfg.WriteBatch,
		FlushTimeout: cfg.FlushTimeout,
		MaxRecords:   cfg.MaxRecords,
		MaxBytes:     cfg.MaxBytes,
		Limits:       cfg.Limits,
		Decoder:      parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"},
	}
	if cfg.IDKey {
		opt.IDKey, opt.IDReplace = idField, true
	}
	if cfg.Keep > 0 {
		opt.Partitions = layout.Partitions{Base: collection, Period: layout.Day, Keep: cfg.Keep}
	}
	if cfg.Mode == model.ModeBucket {
		opt.Grouper = bucketer.Config{KeyPaths: cfg.BucketKey, Window: cfg.Window}
	}
	return opt
}

// Where the simulated plugin writes, and the field of a record's own id.
const (
	idField     = "eid"
	collection  = "logs"
	deadLetters = "logs_dead"
)

// startProcess starts a new process of agent a.
func (r *run) startProcess(a *agent) error {
	a.procs++
	p := &process{name: fmt.Sprintf("a%d.p%d", a.n, a.procs), agent: a}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	retry := writer.Retry{Base: writer.DefaultRetry.Base, Cap: writer.DefaultRetry.Cap, Jitter: r.jitter}
	s, err := sink.New(sinkOptions(&r.cfg, a.id), store{net: r.net, proc: p}, retry, &logger{r: r, proc: p})
	if err != nil {
		return err
	}
	p.sink = s
	a.proc = p
	return nil
}

// logger puts the sink's warnings and errors in the run's trace.
type logger struct {
	r    *run
	proc *process
}

func (l *logger) Debugf(string, ...any) {}
func (l *logger) Infof(string, ...any)  {}

// A killed process logs nothing: its goroutines wind down at once, in no
// order the seed decides.
func (l *logger) Warnf(f string, args ...any) {
	if line := fmt.Sprintf(f, args...); strings.Contains(line, "panic") {
		l.r.panicked(line)
	}
	if !l.proc.dead() {
		l.r.tracef("%s warn: %s", l.proc.name, fmt.Sprintf(f, args...))
	}
}

func (l *logger) Errorf(f string, args ...any) {
	if line := fmt.Sprintf(f, args...); strings.Contains(line, "panic") {
		l.r.panicked(line)
	}
	if !l.proc.dead() {
		l.r.tracef("%s error: %s", l.proc.name, fmt.Sprintf(f, args...))
	}
}

// retain runs the partition retention of process p, as the instance runs
// it once a period: the partitions wholly before the kept range at the
// process's clock (layout.Partitions.Old, the rule the plugin drops by)
// are dropped, a drop command each through the network. The collections
// are listed when the retention starts.
func (r *run) retain(p *process) {
	if p.dead() {
		return
	}
	parts := layout.Partitions{Base: collection, Period: layout.Day, Keep: r.cfg.Keep}
	old := parts.Old(r.srv.Collections(), time.Now())
	if len(old) == 0 {
		return
	}
	r.tracef("%s retention drops %v", p.name, old)
	s := store{net: r.net, proc: p}
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, r.cfg.FlushTimeout)
		defer cancel()
		for _, coll := range old {
			if res := s.do(ctx, server.Op{Kind: server.Drop, Coll: coll}); res.err != nil {
				return // tried again at the next retention
			}
		}
	}()
}

// ridsIn are the rids of the records document d of coll holds.
func ridsIn(d bson.Raw, coll string) []string {
	if logs, ok := d.Lookup(model.Logs).ArrayOK(); ok {
		entries, _ := logs.Values()
		var rids []string
		for _, e := range entries {
			rid, _ := ridOf(e.Document())
			rids = append(rids, rid)
		}
		return rids
	}
	if coll == deadLetters {
		rid, _ := parkedRid(d)
		return []string{rid}
	}
	if model.IsSealed(d) {
		return nil
	}
	rid, _ := ridOf(d)
	return []string{rid}
}

// recordColls are the collections records are stored in: the collection,
// or its partitions.
func (r *run) recordColls() []string {
	var out []string
	for _, c := range r.srv.Collections() {
		if c != deadLetters {
			out = append(out, c)
		}
	}
	return out
}
