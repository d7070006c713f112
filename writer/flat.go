package writer

import (
	"fmt"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
)

// The flat protocol, as transitions: what an insert (or replace) of a
// batch of documents does next, decided from its state and the outcome of
// the last thing it did. Nothing here sends a command, reads a clock or
// waits: the executor (inserter.insert) carries out each action and feeds
// its outcome back through the on* entries, the only ways its state
// changes.
//
// A batch is put (one insert or replace command). Stored: done. Otherwise
// the documents the server refused for their content are taken from the
// reply; a lost connection is weighed (a document alone: a control command
// as large, see Dropped; several: counted, and after suspectAfter in a row
// or once a search is under way, the server pinged); the documents stored
// already are looked up; and what is left is put again: at once when some
// went or the server answers a document alone, split in halves when the
// content is suspect or refused without a usable index (a document alone
// is then parked with its reason), else after a backoff.

// flatKind is what the flat protocol asks the executor to do.
type flatKind uint8

const (
	// flatPut: send the documents pending as one command.
	flatPut flatKind = iota
	// flatControl: send the control command of bytes bytes (see Dropped).
	flatControl
	// flatPing: ask whether the server answers (false once the flush's
	// deadline has passed).
	flatPing
	// flatFind: look up which of pending are stored already.
	flatFind
	// flatBackoff: wait before attempt number attempt.
	flatBackoff
	// flatFence: take the _id of pending[0], a document alone about to be
	// parked whose insert may still apply, with a stand-in (see
	// Fence), and say whether the document itself holds it.
	flatFence
	// flatDone: every document is stored or refused.
	flatDone
	// flatFail: the flush ends with err.
	flatFail
)

func (k flatKind) String() string {
	return [...]string{"put", "control", "ping", "find", "backoff", "fence", "done", "fail"}[k]
}

// flatAction is the next step of a flat write.
type flatAction struct {
	kind    flatKind
	pending []int // flatPut, flatFind: indexes into the documents
	bytes   int   // flatControl
	attempt int   // flatBackoff
	err     error // flatFail
}

// flatFrame is one batch being written: the documents left of it, the
// connections lost in a row on it, the backoffs it waited, and what the
// last put's outcome said while it is being sorted out.
type flatFrame struct {
	pending          []int
	netErrs, waits   int
	err              error
	poison           map[int]string
	suspect, answers bool
}

// flatProto is the state of the flat writes of one InsertAll or
// ReplaceAll: the documents, the smallest split made (limit), the
// documents found stored already, the drops counted for a document alone,
// and the batches under way, the one being written last.
type flatProto struct {
	coll    string
	docs    []Doc
	replace bool
	version int64       // with replace, the version written (see ReplaceAll)
	drops   map[int]int // given: losses in a row of a document alone, by index
	limit   int
	existed int
	lost    map[int]int // to give back
	frames  []flatFrame
	refused []Refused
}

// begin starts the write of pending.
func (m *flatProto) begin(pending []int) flatAction {
	m.refused = nil
	return m.push(pending)
}

func (m *flatProto) push(pending []int) flatAction {
	f := flatFrame{pending: pending}
	if len(pending) == 1 {
		f.netErrs = m.drops[pending[0]]
	}
	m.frames = append(m.frames, f)
	return flatAction{kind: flatPut, pending: pending}
}

func (m *flatProto) top() *flatFrame { return &m.frames[len(m.frames)-1] }

// onPut takes the outcome of a put.
func (m *flatProto) onPut(err error) flatAction {
	f := m.top()
	if err == nil {
		return m.pop()
	}
	f.err, f.poison = err, poisonOf(err, f.pending)
	f.suspect, f.answers = false, false
	if errkind.Of(err) != errkind.Lost {
		return flatAction{kind: flatFind, pending: f.pending}
	}
	if len(f.pending) == 1 {
		// One document alone: suspected only on the evidence of Dropped
		// (and then only if not stored).
		return flatAction{kind: flatControl, bytes: len(m.docs[f.pending[0]].Raw)}
	}
	// Once a search is under way, the content around it is suspect from
	// the first dropped connection.
	if lostMany(&f.netErrs, m.limit > 0) {
		return flatAction{kind: flatPing}
	}
	return flatAction{kind: flatFind, pending: f.pending}
}

// onControl takes the outcome of the control command.
func (m *flatProto) onControl(p probe) flatAction {
	f := m.top()
	next := afterControl(&f.netErrs, p)
	f.suspect, f.answers = next == dropPark, next == dropRepeat
	return flatAction{kind: flatFind, pending: f.pending}
}

// onPing takes whether the server answered.
func (m *flatProto) onPing(answered bool) flatAction {
	f := m.top()
	f.suspect = answered
	return flatAction{kind: flatFind, pending: f.pending}
}

// onFind takes the documents of pending found stored (or their stand-ins),
// or the error of the look-up, and decides what is left and how it is
// written next.
func (m *flatProto) onFind(stored map[int]holding, ferr error) flatAction {
	f := m.top()
	if ferr != nil {
		f.err, f.suspect, f.answers = ferr, false, false
	}
	next := m.sortOut(f.pending, stored, f.poison, existedBefore(f.err, f.pending))
	progress := len(next) < len(f.pending)
	f.pending = next
	switch {
	case len(f.pending) == 0:
		return m.pop()
	case progress:
		f.netErrs = 0
		return flatAction{kind: flatPut, pending: f.pending}
	case f.suspect || errkind.Of(f.err) == errkind.Poison:
		if len(f.pending) == 1 {
			err := f.err
			if f.suspect {
				// Its write may still apply, late: fence it first.
				return flatAction{kind: flatFence, pending: f.pending}
			}
			if f.suspect {
				err = droppedAlone(f.netErrs, f.err)
			}
			m.refused = append(m.refused, Refused{Index: f.pending[0], Reason: refusal(err.Error())})
			return m.pop()
		}
		return m.split()
	case f.answers:
		return flatAction{kind: flatPut, pending: f.pending} // the server answers: repeat at once
	}
	f.waits++
	return flatAction{kind: flatBackoff, attempt: f.waits}
}

// onFenced takes the outcome of the fence of a document alone about to be
// parked: stored, its _id holds the document itself (an insert of it
// applied); else it holds the stand-in, and the document is parked; err:
// the fence failed, and the insert goes on after a backoff.
func (m *flatProto) onFenced(stored bool, err error) flatAction {
	f := m.top()
	switch {
	case err != nil:
		f.err, f.suspect = err, false
		f.waits++
		return flatAction{kind: flatBackoff, attempt: f.waits}
	case stored:
		m.existed++
	default:
		m.refused = append(m.refused, Refused{Index: f.pending[0], Reason: refusal(droppedAlone(f.netErrs, f.err).Error())})
	}
	return m.pop()
}

// onBackoff takes the end of a backoff: werr when the flush's deadline
// passed instead.
func (m *flatProto) onBackoff(werr error) flatAction {
	f := m.top()
	if werr != nil {
		err := fmt.Errorf("inserting into %s: %w", m.coll, f.err)
		m.keepDrops(f)
		m.frames = m.frames[:0]
		return flatAction{kind: flatFail, err: err}
	}
	return flatAction{kind: flatPut, pending: f.pending}
}

// split replaces the batch written by its halves, the first written first,
// to find the document a refusal without a usable index (or a suspect lost
// connection) is about.
func (m *flatProto) split() flatAction {
	f := m.top()
	pending := f.pending
	half := halve(len(pending))
	if m.limit == 0 || half < m.limit {
		m.limit = half
	}
	m.frames = m.frames[:len(m.frames)-1]
	m.frames = append(m.frames, flatFrame{pending: pending[half:]})
	if len(pending[half:]) == 1 {
		m.top().netErrs = m.drops[pending[half]]
	}
	return m.push(pending[:half])
}

// pop ends the batch written and goes on with the one below it, if any:
// the second half of a split, put for the first time.
func (m *flatProto) pop() flatAction {
	m.keepDrops(m.top())
	m.frames = m.frames[:len(m.frames)-1]
	if len(m.frames) == 0 {
		return flatAction{kind: flatDone}
	}
	return flatAction{kind: flatPut, pending: m.top().pending}
}

// keepDrops keeps, for the chunk's next attempt, the connections a
// document alone was losing in a row as its write ended.
func (m *flatProto) keepDrops(f *flatFrame) {
	if len(f.pending) == 1 && f.netErrs > 0 {
		m.lost = map[int]int{f.pending[0]: f.netErrs}
	}
}

// sortOut counts the documents of pending already stored (of those, with
// before, the ones it names), adds those refused to refused (and those an
// earlier attempt fenced, their stand-ins found), and returns the rest, to
// try again.
func (m *flatProto) sortOut(pending []int, stored map[int]holding, poison map[int]string, before map[int]bool) []int {
	next := pending[:0:0]
	for _, p := range pending {
		switch {
		case stored[p] == heldByStandIn:
			m.refused = append(m.refused, Refused{Index: p, Reason: fencedEarlier})
		case stored[p] == heldByDoc && before != nil && !before[p]:
			// Written by the insert just answered.
		case stored[p] == heldByDoc:
			m.existed++
		case poison[p] != "":
			m.refused = append(m.refused, Refused{Index: p, Reason: refusal(poison[p])})
		default:
			next = append(next, p)
		}
	}
	return next
}
