package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// Result is what one run did and found.
type Result struct {
	Seed   uint64
	Config Config
	Steps  int
	// Faults counts the faults injected, by kind.
	Faults map[string]int
	// Excluded counts the chunks the generator left out, by the name of
	// the README's window they would have fallen in.
	Excluded map[string]int
	Chunks   int // chunks answered Done
	Records  int // records of those chunks
	Stored   int // entries or documents stored
	Parked   int // records parked
	// Failure is what the oracle found broken, nil when the promise held.
	Failure error
	Trace   []string
}

// healSteps bounds the steps a run may take, faults off, to finish what
// is left once its budget is spent.
const healSteps = 20000

// Run runs the simulation of seed: it must be called inside a synctest
// bubble (see testing/synctest), whose clock it advances.
func Run(seed uint64, tweak func(*Config)) Result {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	r := &run{rng: rng, net: &net{}, srv: server.New(), out: &outcomes{}, expired: map[string]int{}}
	r.jitterFrac = rng.Float64()
	r.cfg = draw(rng)
	r.ids = rand.New(rand.NewPCG(seed^0x1d5, seed))
	drawIDs(r.ids, &r.cfg)
	drawParts(rand.New(rand.NewPCG(seed^0x9a7, seed)), &r.cfg)
	drawAims(rand.New(rand.NewPCG(seed^0xa1, seed)), &r.cfg)
	if r.cfg.HoldParks > 0 {
		// Dead letters held land among the retries that heal the run.
		r.lateHeal = 0.5
	}
	if tweak != nil {
		tweak(&r.cfg)
	}
	r.res = Result{Seed: seed, Config: r.cfg, Faults: map[string]int{}, Excluded: map[string]int{}}
	r.srv.Refuse = refuse
	r.srv.Order = func(n int, swap func(i, j int)) { r.rng.Shuffle(n, swap) }
	r.tracef("config: %s", r.cfg)
	defer r.stop()
	if err := r.setUp(); err != nil {
		r.res.Failure = err
		return r.result()
	}
	if err := r.loop(); err != nil {
		r.res.Failure = err
		return r.result()
	}
	r.res.Failure = r.check()
	if p := r.firstPanic(); p != "" && r.res.Failure == nil {
		r.res.Failure = fmt.Errorf("a flush panicked: %s", p)
	}
	if r.res.Failure != nil {
		r.traceState()
	}
	return r.result()
}

// traceState ends the trace of a failed run with what the server holds:
// each document's _id, state and the records it stores.
func (r *run) traceState() {
	for _, coll := range append(r.recordColls(), deadLetters) {
		for _, d := range r.srv.Docs(coll) {
			r.tracef("state %s %v sealed=%v: %s", coll, d.Lookup(model.ID), model.IsSealed(d), strings.Join(ridsIn(d, coll), " "))
		}
	}
}

// panicked records a panic the sink caught and logged: a bug, whatever
// the oracle says of the data.
func (r *run) panicked(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panic == "" {
		r.panic = line
	}
}

func (r *run) firstPanic() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.panic
}

// stop kills every process and waits for their goroutines to end: the
// bubble ends with its last goroutine.
func (r *run) stop() {
	for _, a := range r.agents {
		a.proc.killed.Store(true)
		a.proc.cancel()
	}
	synctest.Wait()
}

// run is the state of one run. Its fields are touched by the scheduler
// alone, but for trace (see tracef) and out.
type run struct {
	cfg    Config
	rng    *rand.Rand
	ids    *rand.Rand // the draws of records' own ids (see drawIDs)
	net    *net
	srv    *server.Server
	out    *outcomes
	agents []*agent
	held   []server.Op // commands in the network, applied later or never
	res    Result
	heal   bool
	// expired: by rid, the copies of records in partitions dropped.
	expired map[string]int
	// retained: the last retention, once every chunk is answered Done.
	retained bool
	// lateHeal: while healing, the chance a step goes on with the flushes
	// before the next held command lands (0: held commands land first).
	lateHeal float64

	mu    sync.Mutex // guards trace and panic, written by the sink's goroutines
	trace []string
	panic string // the first panic a flush logged
	// jitterFrac is the sink's backoff jitter, drawn once from the seed:
	// flushes that back off at one instant draw in the Go scheduler's
	// order, so a shared stream of draws would not replay.
	jitterFrac float64
}

func (r *run) result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Trace = r.trace
	return r.res
}

func (r *run) tracef(f string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", float64(time.Since(epoch))/float64(time.Second)) + fmt.Sprintf(f, args...)
	r.mu.Lock()
	r.trace = append(r.trace, line)
	r.mu.Unlock()
}

// epoch is the bubble's clock at start: midnight UTC, 2000-01-01.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// jitter is the sink's backoff jitter: a fraction of n drawn from the
// run's seed.
func (r *run) jitter(n int64) int64 { return int64(float64(n) * r.jitterFrac) }

// setUp makes the agents and their chunks and starts their processes.
func (r *run) setUp() error {
	contents := makeContents(r.rng, r.ids, &r.cfg, time.Now().Add(-time.Hour))
	n := 0
	for i := range r.cfg.Agents {
		a := &agent{n: i, id: fmt.Sprintf("agent%d", i), workers: r.cfg.Workers}
		for _, c := range contents[i] {
			a.chunks = append(a.chunks, &chunk{n: n, agent: a, content: c, due: time.Now().Add(time.Duration(n) * r.cfg.Spacing / 4)})
			n++
		}
		r.agents = append(r.agents, a)
		if err := r.startProcess(a); err != nil {
			return err
		}
	}
	return nil
}

// loop runs steps until the budget is spent, then heals (faults off, every
// held command delivered) until every chunk is answered Done.
func (r *run) loop() error {
	for step := 0; ; step++ {
		// Every step at an instant of its own: timers set at distinct
		// steps never fire together.
		time.Sleep(time.Duration(1+r.rng.IntN(1000)) * time.Microsecond)
		synctest.Wait()
		r.res.Steps = step
		if !r.heal && step >= r.cfg.Steps {
			r.heal = true
			r.tracef("heal: faults off, %d commands held", len(r.held))
		}
		r.collect()
		pending, abandoned := r.net.waiting()
		r.decideAbandoned(abandoned)
		if r.heal && len(r.held) > 0 && (r.lateHeal == 0 || r.rng.Float64() >= r.lateHeal) {
			op := r.held[0]
			r.held = r.held[1:]
			r.apply(op, "held, applied late")
			continue
		}
		if r.heal && len(pending) == 0 && len(r.held) == 0 && r.done() {
			synctest.Wait() // the killed processes' flushes end
			if r.cfg.Keep > 0 && !r.retained {
				// The next period's retention, with nothing in flight.
				r.retained = true
				r.retain(r.agents[0].proc)
				continue
			}
			return nil
		}
		if step > r.cfg.Steps+healSteps {
			return fmt.Errorf("no end after %d steps: %d chunks not answered Done", step, r.open())
		}
		r.act(pending)
	}
}

// act takes one step: answers a command, delivers a held one, starts a
// flush, kills a process, or lets time pass.
func (r *run) act(pending []*call) {
	f := r.cfg.Faults
	if r.heal {
		f = Faults{}
	}
	startable := r.startable()
	switch {
	case len(r.held) > 0 && r.rng.Float64() < f.Late:
		i := r.rng.IntN(len(r.held))
		op := r.held[i]
		r.held = slices.Delete(r.held, i, i+1)
		r.res.Faults["late"]++
		r.apply(op, "held, applied late")
	case !r.heal && r.cfg.Days > 0 && r.rng.Float64() < 0.005:
		r.cfg.Days--
		r.res.Faults["a day passes"]++
		r.tracef("a day passes")
		time.Sleep(24 * time.Hour)
	case r.cfg.Keep > 0 && r.rng.Float64() < 0.01:
		r.retain(r.agents[r.rng.IntN(len(r.agents))].proc)
	case !r.heal && r.cfg.Restarts > 0 && r.rng.Float64() < 0.01:
		r.cfg.Restarts--
		a := r.agents[r.rng.IntN(len(r.agents))]
		if r.identicalPending(a) {
			// Its resend would be the first of its content in the new
			// process, identical to a chunk an earlier one acknowledged.
			r.res.Excluded[windowRestart]++
			r.tracef("%s not killed: %s", a.proc.name, windowRestart)
			break
		}
		r.kill(a)
	case len(startable) > 0 && (len(pending) == 0 || r.rng.IntN(4) == 0):
		r.start(startable[r.rng.IntN(len(startable))])
	case len(pending) > 0 && r.rng.Float64() >= f.Slow:
		r.deliver(pending[r.rng.IntN(len(pending))], f)
	default:
		d := time.Duration(1+r.rng.IntN(500)) * time.Millisecond
		if len(pending) > 0 {
			r.res.Faults["slow"]++
			d = time.Duration(r.rng.Int64N(int64(2 * r.cfg.FlushTimeout)))
		}
		time.Sleep(d)
	}
}

// collect takes the outcomes of the flushes that ended: Fluent Bit drops
// a chunk answered Done and flushes one answered Retry again later. The
// outcome of a killed process's flush never reaches Fluent Bit.
func (r *run) collect() {
	for _, f := range r.out.take() {
		c := f.c
		if f.proc.dead() || c.by != f.proc {
			continue
		}
		c.by = nil
		r.tracef("%s chunk %d (content %d): %s, %d stored, %d found, %d parked: %v", f.proc.name, c.n, c.content.n,
			f.res.Status, f.res.Stored, f.res.Found, f.res.Parked, f.res.Err)
		if f.res.Status == sink.Done {
			c.state, c.ackedAt = acked, r.res.Steps
			r.res.Chunks++
			r.res.Records += len(c.content.rids)
			continue
		}
		c.state = queued
		c.due = time.Now().Add(time.Duration(1+r.rng.IntN(10)) * time.Second)
	}
}

// startable lists the chunks a worker can flush now.
func (r *run) startable() []*chunk {
	var out []*chunk
	now := time.Now()
	for _, a := range r.agents {
		if a.busy() >= a.workers {
			continue
		}
		for _, c := range a.chunks {
			if c.state == queued && !c.due.After(now) {
				out = append(out, c)
			}
		}
	}
	return out
}

// start flushes chunk c in its agent's process, unless the chunk falls in
// a window the README names (see excluded).
func (r *run) start(c *chunk) {
	p := c.agent.proc
	if w := r.excluded(c); w != "" {
		c.state = excluded
		r.res.Excluded[w]++
		r.tracef("%s chunk %d (content %d) left out: %s", p.name, c.n, c.content.n, w)
		return
	}
	c.state, c.by, c.started = flushing, p, r.res.Steps
	c.attempts++
	if c.flushedBy == nil {
		c.flushedBy = map[*process]bool{}
	}
	c.flushedBy[p] = true
	r.tracef("%s flush chunk %d (content %d, %d records, attempt %d)", p.name, c.n, c.content.n, len(c.content.rids), c.attempts)
	go func() {
		res := p.sink.Flush(p.ctx, c.content.tag, c.content.bytes)
		r.out.add(flushed{c: c, proc: p, res: res})
	}()
}

// The windows of the README, where the promise does not hold; the
// generator leaves out the chunks that would fall in one.
const (
	// windowRestart: a new chunk byte-identical to one an earlier process
	// of the agent acknowledged, the first of its content in this process,
	// is taken for that one's resend.
	windowRestart = "identical chunk first after a restart"
)

// excluded names the window chunk c would fall in, or "".
func (r *run) excluded(c *chunk) string {
	if c.attempts > 0 {
		return ""
	}
	a, p := c.agent, c.agent.proc
	before := false
	for _, o := range a.chunks {
		if o == c || o.content != c.content {
			continue
		}
		if o.flushedBy[p] {
			return "" // its content is known to this process
		}
		before = before || o.state == acked
	}
	if before {
		return windowRestart
	}
	return ""
}

// identicalPending reports whether agent a has a chunk not answered Done
// whose content a chunk of a was answered Done for.
func (r *run) identicalPending(a *agent) bool {
	done := map[*content]bool{}
	for _, c := range a.chunks {
		if c.state == acked {
			done[c.content] = true
		}
	}
	for _, c := range a.chunks {
		if c.state != acked && c.state != excluded && c.attempts > 0 && done[c.content] {
			return true
		}
	}
	return false
}

// kill ends agent a's process as kill -9 would: what it remembered is
// lost, its commands in flight stay in the network, and a new process
// resends the chunks it was flushing.
func (r *run) kill(a *agent) {
	old := a.proc
	old.killed.Store(true)
	old.cancel()
	r.res.Faults["restart"]++
	for _, c := range a.chunks {
		if c.state == flushing && c.by == old {
			c.state, c.by, c.due = queued, nil, time.Now()
		}
	}
	if err := r.startProcess(a); err != nil {
		panic(err) // the options started the first process
	}
	r.tracef("%s killed, %s started", old.name, a.proc.name)
}

// done reports whether every chunk is answered Done.
func (r *run) done() bool { return r.open() == 0 }

func (r *run) open() int {
	n := 0
	for _, a := range r.agents {
		for _, c := range a.chunks {
			if c.state != acked && c.state != excluded {
				n++
			}
		}
	}
	return n
}

// decideAbandoned decides the fate of commands whose callers gave up on
// them: each stays in the network (applied later) or is lost.
func (r *run) decideAbandoned(calls []*call) {
	for _, c := range calls {
		if isWrite(c.op) && !r.heal && r.rng.Float64() < r.cfg.Faults.Abandoned {
			r.res.Faults["abandoned, held"]++
			r.hold(c.op, c.proc.name+" gave up")
		}
	}
}

func (r *run) hold(op server.Op, why string) {
	r.tracef("hold %s (%s)", describe(op), why)
	r.held = append(r.held, op)
}

// deliver takes call c and answers it, with a fault drawn from f.
func (r *run) deliver(c *call, f Faults) {
	if !r.net.take(c) {
		return
	}
	op := c.op
	if choked(op) {
		r.res.Faults["choked"]++
		r.tracef("%s: %s: connection closed on its content", c.proc.name, describe(op))
		c.reply <- failed(op, lost(nil))
		return
	}
	if f != (Faults{}) && r.cfg.HoldParks > 0 && op.Kind == server.InsertMany && op.Coll == deadLetters && r.rng.Float64() < r.cfg.HoldParks {
		r.hold(op, c.proc.name+" sent it, a dead letter the network holds")
		r.res.Faults["dead letter held"]++
		c.reply <- failed(op, lost(nil))
		return
	}
	if f != (Faults{}) && marked(op, holdMark) {
		r.hold(op, c.proc.name+" sent it, holding a record the network holds")
		r.res.Faults["held by content"]++
		c.reply <- failed(op, lost(nil))
		return
	}
	u := r.rng.Float64()
	below := func(p float64) bool {
		if u < p {
			return true
		}
		u -= p
		return false
	}
	write := isWrite(op)
	var res result
	var fault string
	switch {
	case below(f.Unsent):
		fault, res = "unsent", failed(op, unreachable())
	case below(f.Lost):
		fault, res = "lost", failed(op, lost(nil))
	case below(f.Unheard):
		r.applyOp(op)
		fault, res = "applied, reply lost", failed(op, lost(nil))
	case write && below(f.Held):
		r.hold(op, c.proc.name+" sent it")
		fault, res = "held", failed(op, lost(nil))
	case op.Kind == server.Upserts && below(f.Conflict):
		fault, res = "write conflict", failed(op, serverError(112, "WriteConflict"))
	case write && below(f.Busy):
		fault, res = "busy", failed(op, serverError(189, "PrimarySteppedDown"))
	case op.Kind == server.Upserts && len(op.Ups) > 1 && below(f.Partial):
		fault, res = "partial reply", r.partial(op)
	default:
		res = reply(r.applyOp(op))
	}
	if fault != "" {
		r.res.Faults[fault]++
	}
	r.tracef("%s: %s -> %s%s", c.proc.name, describe(op), outcome(res), suffix(fault))
	c.reply <- res
}

// apply applies a command whose reply nobody waits for.
func (r *run) apply(op server.Op, why string) {
	if choked(op) {
		return
	}
	res := reply(r.applyOp(op))
	r.tracef("%s: %s -> %s", why, describe(op), outcome(res))
}

// applyOp applies op to the server; a drop's records count as expired.
func (r *run) applyOp(op server.Op) server.Reply {
	if op.Kind == server.Drop {
		for _, d := range r.srv.Docs(op.Coll) {
			for _, rid := range ridsIn(d, op.Coll) {
				r.expired[rid]++
			}
		}
	}
	return r.srv.Apply(op)
}

// partial applies the statements of an update command one by one up to
// the first that fails, and answers as some MongoDB-compatible servers do:
// that failure, under the index of the command's first statement, and
// counts of nothing.
func (r *run) partial(op server.Op) result {
	var werr *mongo.BulkWriteException
	for _, u := range op.Ups {
		one := op
		one.Ups = []writer.Upsert{u}
		errs := r.srv.Apply(one).Errs
		if errs[0] == nil {
			continue
		}
		var we mongo.WriteException
		code := 0
		if errors.As(errs[0], &we) && len(we.WriteErrors) > 0 {
			code = we.WriteErrors[0].Code
		}
		werr = &mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Index: 0, Code: code, Message: errs[0].Error()}}}}
		break
	}
	if werr == nil {
		return result{errs: writer.Outcomes(op.Ups, &mongo.BulkWriteResult{}, nil)}
	}
	return result{errs: writer.Outcomes(op.Ups, &mongo.BulkWriteResult{}, *werr)}
}

// isWrite reports whether op may change the server's data.
func isWrite(op server.Op) bool {
	switch op.Kind {
	case server.Upserts, server.InsertMany, server.Replace, server.Delete, server.Drop:
		return true
	}
	return false
}

// choked reports whether the server closes the connection on op: a
// command holding a record marked so.
func choked(op server.Op) bool { return marked(op, chokeMark) }

// marked reports whether write op holds a record marked mark, outside the
// dead letters (which hold the records' raw bytes).
func marked(op server.Op, mark string) bool {
	if strings.HasSuffix(op.Coll, "_dead") {
		return false
	}
	for _, u := range op.Ups {
		if strings.Contains(string(u.Update), mark) {
			return true
		}
	}
	for _, d := range op.Docs {
		if strings.Contains(string(d), mark) {
			return true
		}
	}
	return false
}

// refuse is the model's answer to content: statements holding a record
// marked poison are refused, outside the dead letters.
func refuse(coll string, stmt bson.Raw) (int, string) {
	if !strings.HasSuffix(coll, "_dead") && strings.Contains(string(stmt), poisonMark) {
		return 2, "BadValue: a value the server refuses (sim)"
	}
	return 0, ""
}

// describe names a command for the trace.
func describe(op server.Op) string {
	switch op.Kind {
	case server.Upserts:
		ids := make([]string, len(op.Ups))
		for i, u := range op.Ups {
			ids[i] = fmt.Sprintf("%v@%v", u.Filter.Lookup("_id"), u.Filter.Lookup("count"))
		}
		return fmt.Sprintf("update %s [%s]", op.Coll, strings.Join(ids, " "))
	case server.InsertMany, server.Replace:
		verb := map[server.Kind]string{server.InsertMany: "insert", server.Replace: "replace"}[op.Kind]
		return fmt.Sprintf("%s %s %d docs", verb, op.Coll, len(op.Docs))
	case server.Find:
		return fmt.Sprintf("find %s %s", op.Coll, short(op.Filter.String()))
	case server.Ping:
		return "ping"
	case server.UpdateMany:
		return fmt.Sprintf("update many %s %s", op.Coll, short(op.Ups[0].Filter.String()))
	}
	return fmt.Sprintf("op %d %s", op.Kind, op.Coll)
}

func short(s string) string {
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}

func outcome(res result) string {
	if res.errs != nil {
		parts := make([]string, len(res.errs))
		for i, e := range res.errs {
			parts[i] = "ok"
			if e != nil {
				parts[i] = short(e.Error())
			}
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	if res.err != nil {
		return short(res.err.Error())
	}
	if res.docs != nil {
		return fmt.Sprintf("%d docs", len(res.docs))
	}
	return "ok"
}

func suffix(fault string) string {
	if fault == "" {
		return ""
	}
	return " (fault: " + fault + ")"
}
