package writer

import (
	"errors"
	"fmt"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// The bucket protocol, as transitions: what one group's write does next,
// decided from its state and the outcome of the last thing it did. Nothing
// here sends a command, reads a clock or waits: the executor (rounds)
// carries out each action and feeds its outcome back, through next or the
// typed entry of its event (onPlan, onReply, onPing, onProbe, onRead,
// onFenced: the same transitions without an allocation per statement).
// Those are the only ways a group write's state changes; the executor reads
// it (p, ownCommand) to build statements.
//
// A group write plans a write (write: send the statement of p), sends it
// with the round's other statements, and takes its reply: the records are
// stored (plan the next write), the write missed the bucket (read it; a
// bucket holding the chunk's entries nothing accounts for, or a group this
// process has not fenced, is fenced and looked at again), the reply is
// lost or not shown (repeat, alone), the connection dropped on the write
// alone (ping, or for one record send the control; see Dropped), the
// server is busy (back off), or the content is refused (split the write in
// halves, or park the record, fenced first when a write of it was in
// doubt). It ends when every record is stored or parked (done).

// actKind is what a group write asks the executor to do.
type actKind uint8

const (
	// actWrite: send the statement of the planned write p.
	actWrite actKind = iota
	// actRound: nothing before the next round, which plans again (a new
	// write, or the same one repeated at once).
	actRound
	// actBackoff: wait before attempt number attempt, then repeat the write
	// in the next round.
	actBackoff
	// actPing: ask whether the server answers on another connection.
	actPing
	// actControl: send the control command of bytes bytes (see Dropped).
	actControl
	// actRead: read the bucket p missed (newest: the group's newest bucket
	// instead; entries: with its logs).
	actRead
	// actFence: fence the group's earlier writes (seal every open bucket
	// of the group; bucket: and insert its next bucket sealed, where a
	// write sent before may still insert it, as the record in doubt is to
	// be parked, not written) and look again for what they stored.
	actFence
	// actDone: every record is stored or parked.
	actDone
	// actFail: the flush ends with err (a read failed, or the executor
	// fed an outcome the write was not waiting for).
	actFail
)

func (k actKind) String() string {
	return [...]string{"write", "round", "backoff", "ping", "control", "read", "fence", "done", "fail"}[k]
}

// action is the next step of a group write.
type action struct {
	kind    actKind
	attempt int  // actBackoff
	bytes   int  // actControl
	newest  bool // actRead
	entries bool // actRead
	bucket  bool // actFence
	err     error
}

func (a action) String() string {
	switch a.kind {
	case actBackoff:
		return fmt.Sprintf("backoff %d", a.attempt)
	case actControl:
		return fmt.Sprintf("control %d", a.bytes)
	case actFence:
		if a.bucket {
			return "fence bucket"
		}
		return "fence group"
	case actRead:
		switch {
		case a.newest:
			return "read newest"
		case a.entries:
			return "read entries"
		}
		return "read"
	}
	return a.kind.String()
}

// phase is what a group write waits for.
type phase uint8

const (
	idle          phase = iota // a plan (planNext)
	sent                       // the reply to its statement (replied)
	pinging                    // the answer to a ping (pinged)
	probing                    // the control's outcome (probe)
	readingDup                 // the bucket a write missed (bucketRead)
	fencing                    // the look after a fence (fenced)
	fencingPoison              // the look after a fence, before parking a record in doubt (fenced)
	finished                   // nothing
)

// An event is the outcome of the last action, fed to next.
type event interface{ isEvent() }

// planNext starts a round: plan the next write.
type planNext struct{}

// replied is the outcome of the statement of p. shared: it was one of
// several statements of a command; split: commands of several statements
// lost their connection in rounds in a row, the server answering a ping,
// so that their statements go alone from now on (see splitNext).
// adds and vals are what the write adds to the bucket (bytes counted, and
// keep_values values); bytes is the statement's size.
type replied struct {
	err           error
	shared, split bool
	adds, bytes   int
	vals          []bucketer.Values
}

// pinged is whether the server answered a ping (false too when the flush
// deadline had passed).
type pinged bool

// bucketRead is what a read of the bucket a write missed found: nothing, or
// the bucket's state; applied is how many of the records not yet written,
// in order, it holds from the position the write assumed, written by this
// chunk (an earlier attempt whose outcome was unknown); sealed: it takes
// no more writes; foreign: it holds a write of the chunk that nothing
// accounts for (see Buckets.read); gone: a second read, for the entries,
// found it no more; err: that read failed, which ends the flush.
type bucketRead struct {
	found             bool
	seq, count, bytes int
	values            map[string]map[string]bool
	applied           int
	sealed, foreign   bool
	gone              bool
	err               error
}

// fenced is what the look after a fence found: the records of the chunk
// stored in the group's buckets (by index in the chunk) and where, and the
// records recorded parked (the one in doubt among them, when the fence
// was to park it); err: the fence or the look failed, which ends the
// flush.
type fenced struct {
	stored map[int]bool
	where  claims
	parked map[int]string // the records recorded parked, with the reason
	err    error
}

func (planNext) isEvent()   {}
func (replied) isEvent()    {}
func (pinged) isEvent()     {}
func (probe) isEvent()      {}
func (bucketRead) isEvent() {}
func (fenced) isEvent()     {}

// sizing is what decides how many records one write takes.
type sizing struct {
	maxRecords, maxBytes int
	header               int // the bytes of a bucket beside its entries and ops
	extra                int // the bytes per entry of its counted values
}

// fit is how many of recs the next write takes into a bucket holding count
// entries of bytes bytes, at most limit when above 0.
func (z sizing) fit(recs []*parser.Record, count, bytes, limit int) int {
	room := z.maxRecords - count
	if limit > 0 {
		room = min(room, limit)
	}
	return bucketer.Fit(recs, room, z.maxBytes-z.header-bytes-opElemBytes, z.extra+1)
}

// claims are the positions in a group's buckets where entries of the
// chunk are accounted for: an earlier attempt's found by the lookup, or a
// write of this attempt taken as stored; by bucket seq, the [from, to)
// spans. A read never takes entries there for a write in doubt, whatever
// they hold (a chunk of identical records holds them at several
// positions), nor for an earlier attempt's write that applied late.
type claims map[int][][2]int

// take records that n entries of the chunk are accounted for at bucket
// seq, from position at.
func (c claims) take(seq, at, n int) {
	if c != nil {
		c[seq] = append(c[seq], [2]int{at, at + n})
	}
}

// taken reports whether position at of bucket seq holds entries of the
// chunk accounted for.
func (c claims) taken(seq, at int) bool {
	for _, s := range c[seq] {
		if at >= s[0] && at < s[1] {
			return true
		}
	}
	return false
}

// groupProto is the state of one group's write: plain data, changed only
// by next.
type groupProto struct {
	st    *groupState
	size  sizing
	recs  []*parser.Record // not yet written
	limit int              // while suspect > 0, the records per write
	// While suspect > 0, the next suspect records are written at most
	// limit at a time.
	suspect int
	p       *part // the write being made, nil when none is planned
	// doubt: a write to bucket p.seq at p.count may have been applied.
	doubt                         bool
	alone                         bool // send the next write in a command of its own
	attempt, netErrs, unexplained int
	// lone counts the connections the write of one record has lost in a
	// row, each followed by an answered control (see Dropped); drops are
	// earlier attempts' counts, by record index.
	lone   int
	drops  map[int]int
	err    error // the last error of the write
	adds   int   // the bytes its last statement adds
	cause  error // why a record in doubt is to be parked, once read
	phase  phase
	out    Outcome
	claims claims
	// parked holds the records of the group parked, by this write or
	// an earlier attempt's, by index in the chunk: a look finds none of
	// them stored (see Buckets.stored).
	parked map[int]bool
}

func newGroupProto(st *groupState, size sizing, j Job) groupProto {
	m := groupProto{st: st, size: size, recs: j.Recs, limit: j.Limit, drops: j.Drops}
	if j.Limit > 0 {
		m.suspect = len(j.Recs)
	}
	return m
}

// next takes the outcome of the last action and returns the next. The
// executor calls the typed entries below, which spare it an allocation
// per statement.
func (m *groupProto) next(e event) action {
	switch e := e.(type) {
	case planNext:
		return m.onPlan()
	case replied:
		return m.onReply(e)
	case pinged:
		return m.onPing(bool(e))
	case probe:
		return m.onProbe(e)
	case bucketRead:
		return m.onRead(e)
	case fenced:
		return m.onFenced(e)
	}
	return action{kind: actFail, err: fmt.Errorf("bucket write: %T is not an event", e)}
}

func (m *groupProto) onPlan() action {
	if m.phase != idle && m.phase != finished {
		return m.outOfTurn(planNext{})
	}
	return m.plan()
}

func (m *groupProto) onReply(r replied) action {
	if m.phase != sent {
		return m.outOfTurn(r)
	}
	return m.replied(r)
}

func (m *groupProto) onPing(answered bool) action {
	if m.phase != pinging {
		return m.outOfTurn(pinged(answered))
	}
	return m.pinged(answered)
}

func (m *groupProto) onProbe(p probe) action {
	if m.phase != probing {
		return m.outOfTurn(p)
	}
	return m.probed(p)
}

func (m *groupProto) onRead(r bucketRead) action {
	if m.phase != readingDup {
		return m.outOfTurn(r)
	}
	return m.read(r)
}

func (m *groupProto) onFenced(f fenced) action {
	if m.phase != fencing && m.phase != fencingPoison {
		return m.outOfTurn(f)
	}
	return m.fenced(f)
}

func (m *groupProto) outOfTurn(e event) action {
	return action{kind: actFail, err: fmt.Errorf("bucket write: %T while waiting in phase %d", e, m.phase)}
}

// ownCommand reports whether the next write goes in a command of its own.
func (m *groupProto) ownCommand() bool { return m.alone || m.suspect > 0 }

// plan plans the next write: as many of the records as fit the bucket, or
// the next bucket when none does, or a record parked that fits no bucket.
func (m *groupProto) plan() action {
	st := m.st
	for len(m.recs) > 0 {
		if m.p == nil {
			if st.sealed {
				st.next() // it takes no more writes
			}
			limit := 0
			if m.suspect > 0 {
				limit = m.limit
			}
			k := m.size.fit(m.recs, st.count, st.bytes, limit)
			if k == 0 {
				if st.count == 0 {
					m.park(fmt.Sprintf("record of %d bytes does not fit in an empty bucket (bucket_max_bytes %d)",
						len(m.recs[0].Doc), m.size.maxBytes))
					continue
				}
				st.next()
				continue
			}
			m.p = &part{seq: st.seq, count: st.count, n: k}
			m.attempt, m.netErrs, m.lone = 0, 0, 0
			if k == 1 {
				m.lone = m.drops[m.recs[0].Index]
			}
		}
		m.phase = sent
		return action{kind: actWrite}
	}
	m.phase = finished
	return action{kind: actDone}
}

// replied takes the reply to the write's statement. A lost connection in a
// command of several statements says nothing of this statement's content.
func (m *groupProto) replied(r replied) action {
	m.err, m.adds = r.err, r.adds
	if !r.shared && errkind.Of(r.err) != errkind.Lost {
		// Alone until its connection holds: sent in a shared command
		// again, a write that loses it would count its losses only every
		// other round, and a search for content the server drops
		// connections on might never start within a flush.
		m.alone = false
	}
	if r.shared && r.split {
		m.alone = true
	}
	k := errkind.Of(r.err)
	network := k == errkind.Lost
	var unconfirmed *Unconfirmed
	switch {
	case errors.As(r.err, &unconfirmed):
		// Repeated alone, it applies at most once and says so.
		m.doubt, m.alone = true, true
		return m.round()
	case k == errkind.None:
		m.stored(r.adds, r.vals)
		return m.round()
	case network && !r.shared && m.p.n > 1:
		if lostMany(&m.netErrs, m.limit > 0) {
			m.phase = pinging
			return action{kind: actPing}
		}
	case network && !r.shared && m.p.n == 1:
		// One record alone: parked only on the evidence of Dropped, and
		// only if it is not stored already.
		m.doubt = true
		m.phase = probing
		return action{kind: actControl, bytes: r.bytes}
	}
	return m.settle(k, r.err)
}

// settle decides on a write's outcome err, of kind k.
func (m *groupProto) settle(k errkind.Kind, err error) action {
	switch {
	case k == errkind.Poison && m.p.n == 1 && m.doubt:
		// A write of the record in doubt may still apply: fence it, then
		// look. A record is never both stored and parked.
		m.cause, m.phase = err, fencingPoison
		return action{kind: actFence, bucket: true}
	case k == errkind.Poison:
		return m.poison(err)
	case k == errkind.Duplicate:
		// Read with all of recs, not only this write: the write applied
		// may have been a larger one, cut in halves after its outcome was
		// lost.
		m.phase = readingDup
		return m.readBucket(m.doubt)
	}
	// Retried: a write conflict says the write did not apply; any other
	// error leaves it in doubt.
	m.doubt = m.doubt || k != errkind.Conflict
	return m.backoff()
}

func (m *groupProto) pinged(answered bool) action {
	if answered {
		return m.poison(m.err)
	}
	return m.settle(errkind.Of(m.err), m.err)
}

func (m *groupProto) probed(r probe) action {
	switch afterControl(&m.lone, r) {
	case dropPark:
		return m.settle(errkind.Poison, droppedAlone(m.lone, m.err))
	case dropRepeat:
		return m.round() // the server answers: repeat at once
	}
	return m.backoff()
}

// readBucket asks for the bucket p missed; on a group this process has not
// seen yet, the group's newest bucket, so that a restart does not walk up
// to it. With doubt the entries come along.
func (m *groupProto) readBucket(doubt bool) action {
	return action{kind: actRead, newest: !m.st.known && !doubt, entries: doubt}
}

// read takes the bucket as read: the group's state moves to it.
func (m *groupProto) read(r bucketRead) action {
	st, p := m.st, m.p
	st.seq, st.count, st.bytes, st.known, st.values, st.sealed = p.seq, 0, 0, true, nil, false
	st.seen = r.found
	if r.found {
		st.seq, st.count, st.bytes, st.values, st.sealed = r.seq, r.count, r.bytes, r.values, r.sealed
	}
	if r.err != nil {
		return action{kind: actFail, err: r.err}
	}
	changed := r.gone || r.sealed || st.seq != p.seq || st.count != p.count
	n := r.applied
	if n > 0 {
		// An earlier attempt of this write (or of a larger one that held
		// it) was applied.
		m.found(n)
		m.unexplained = 0
	}
	if r.foreign || r.found && !st.fenced {
		// An earlier attempt's write applied after the look, or the
		// group has buckets an earlier process may still be writing
		// into: fence the group, then look again.
		m.p, m.phase = nil, fencing
		return action{kind: actFence}
	}
	if n == 0 && !changed {
		// Nothing explains the collision with the bucket as read: another
		// unique index refuses this content.
		if m.unexplained++; m.unexplained >= 2 {
			return m.poison(m.err)
		}
	}
	m.p = nil
	return m.round()
}

// fenced takes what the look after a fence found: the records it found
// stored are written, wherever they are; the group's bucket is sealed. A
// record in doubt to be parked is parked only if the look did not find it.
func (m *groupProto) fenced(f fenced) action {
	if f.err != nil {
		return action{kind: actFail, err: f.err}
	}
	for seq, spans := range f.where {
		m.claims[seq] = append(m.claims[seq], spans...)
	}
	left := m.recs[:0:0]
	stored, parked := 0, 0
	for _, r := range m.recs {
		switch {
		case f.stored[r.Index]:
			stored++
		case f.parked[r.Index] != "":
			m.parkRecord(r, f.parked[r.Index])
			parked++
		default:
			left = append(left, r)
		}
	}
	m.recs, m.out.Stored, m.suspect, m.doubt = left, m.out.Stored+stored, max(m.suspect-stored-parked, 0), false
	m.st.fenced = m.phase == fencing || m.st.fenced
	// Every bucket up to the group's next is sealed: the state is a hint,
	// a write into the next one moves on.
	m.st.sealed = m.st.known && m.st.seen
	m.p = nil
	return m.round()
}

// stored takes the write of p as applied.
func (m *groupProto) stored(adds int, vals []bucketer.Values) {
	st, p := m.st, m.p
	st.seq, st.count, st.bytes, st.known, st.seen = p.seq, p.count+p.n, st.bytes+adds, true, true
	if p.seq == 0 && p.count == 0 {
		// It inserted the group's first bucket: the group had none, so
		// no earlier write of it can apply but an insert of this one.
		st.fenced = true
	}
	st.addValues(vals)
	m.claims.take(p.seq, p.count, p.n)
	m.out.Stored += p.n
	if p.count == 0 {
		m.out.Created++ // no bucket holds 0 entries: this write inserted it
	}
	m.recs = m.recs[p.n:]
	m.suspect = max(m.suspect-p.n, 0)
	m.p, m.doubt, m.unexplained = nil, false, 0
}

// found takes the first n records, which a read found stored by an earlier
// attempt, as written; the doubt is settled.
func (m *groupProto) found(n int) {
	if m.p != nil {
		m.claims.take(m.p.seq, m.p.count, n)
	}
	m.out.Stored += n
	m.recs = m.recs[n:]
	m.suspect = max(m.suspect-n, 0)
	m.doubt = false
}

// poison handles content refused: a write of several records is split in
// halves, a record alone is parked.
func (m *groupProto) poison(err error) action {
	if n := m.p.n; n > 1 {
		m.suspect = max(m.suspect, n)
		m.limit = halve(n)
		m.p = nil
	} else {
		m.park(refusal(err.Error()))
	}
	return m.round()
}

// park parks the first record not written with reason.
func (m *groupProto) park(reason string) {
	m.parkRecord(m.recs[0], reason)
	m.recs = m.recs[1:]
	m.suspect = max(m.suspect-1, 0)
	m.p = nil
}

// parkRecord adds r to the records parked.
func (m *groupProto) parkRecord(r *parser.Record, reason string) {
	m.out.Poison = append(m.out.Poison, Parked{r.Index, reason})
	if m.parked == nil {
		m.parked = map[int]bool{}
	}
	m.parked[r.Index] = true
}

func (m *groupProto) round() action {
	m.phase = idle
	return action{kind: actRound}
}

func (m *groupProto) backoff() action {
	m.attempt++
	m.phase = idle
	return action{kind: actBackoff, attempt: m.attempt}
}

// outcome is what the write achieved so far.
func (m *groupProto) outcome() Outcome {
	out := m.out
	if m.suspect > 0 {
		out.Limit = m.limit
	}
	if m.p != nil && m.p.n == 1 && m.lone > 0 {
		out.Drops = map[int]int{m.recs[0].Index: m.lone}
	}
	return out
}

// splitNext counts the rounds in a row in which a command of several
// statements lost its connection (lost, before this round), and reports
// whether the shared commands' statements are to be sent alone, if the
// server answers a ping: a command that keeps losing its connection while
// the server answers carries content the server drops connections on,
// which each write's own suspicion then finds.
func splitNext(lost int, sharedLost bool) (int, bool) {
	if !sharedLost {
		return 0, false
	}
	return lost + 1, lost+1 >= suspectAfter
}

// batch splits the writes of a round into commands, as indexes into colls
// (each write's collection): by collection, up to size statements each, a
// write to be sent alone in one of its own.
func batch(colls []string, own []bool, size int) [][]int {
	size = max(size, 1)
	var cmds [][]int
	open := map[string]int{} // collection -> its command being filled
	for w, coll := range colls {
		if own[w] {
			cmds = append(cmds, []int{w})
			continue
		}
		i, ok := open[coll]
		if !ok || len(cmds[i]) >= size {
			i = len(cmds)
			open[coll] = i
			cmds = append(cmds, nil)
		}
		cmds[i] = append(cmds[i], w)
	}
	return cmds
}
