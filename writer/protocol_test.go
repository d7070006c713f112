package writer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Errors as the driver returns them, one per kind of failure.
var (
	errDup      = mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Message: "E11000 duplicate key error"}}}
	errConflict = mongo.CommandError{Code: 112, Name: "WriteConflict"}
	errElection = mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}
	errTimeout  = fmt.Errorf("update: %w", context.DeadlineExceeded)
	errDrop     = mongo.CommandError{Code: 6, Labels: []string{"NetworkError"}, Message: "connection closed: EOF"}
	errDollar   = mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 52, Message: "field name starts with $"}}}
	errTooLarge = fmt.Errorf("update: %w", driver.ErrDocumentTooLarge)
	errNotShown = &Unconfirmed{Err: errors.New("the reply accounts for 1 of 3 statements")}
)

// The errors above are of the kinds the rows below rely on.
func TestProtocolErrorKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		want errkind.Kind
	}{{errDup, errkind.Duplicate}, {errConflict, errkind.Conflict}, {errElection, errkind.Unavailable},
		{errTimeout, errkind.Timeout}, {errDrop, errkind.Lost}, {errDollar, errkind.Poison}, {errTooLarge, errkind.Poison}} {
		if got := errkind.Of(c.err); got != c.want {
			t.Errorf("errkind.Of(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Shorthands for the events of the rows.
var (
	plan = planNext{}
	ok   = replied{adds: 300}
)

func reply(err error) replied       { return replied{err: err, bytes: 120} }
func sharedReply(err error) replied { return replied{err: err, shared: true, bytes: 120} }

// protoRow is one transition sequence: a group write set up by state, fed
// events in order, answering each with the action of want; then, its state
// summed up (see describe).
type protoRow struct {
	name   string
	recs   int               // records of 10 bytes each, indexes 0...
	state  func(*groupProto) // before the first event
	events []event
	want   []string
	then   string
	check  func(*testing.T, *groupProto)
}

func newProto(recs int, state func(*groupProto)) *groupProto {
	rs := make([]*parser.Record, recs)
	for i := range rs {
		rs[i] = &parser.Record{Index: i, Doc: bsoncore.NewDocumentBuilder().AppendInt32("n", int32(i)).Build()}
	}
	m := newGroupProto(&groupState{known: true, fenced: true}, sizing{maxRecords: 10, maxBytes: 1 << 20, header: 600}, Job{Recs: rs})
	if state != nil {
		state(&m)
	}
	return &m
}

// describe sums up a group write's state: stored and parked records, the
// records left, the write planned (seq/count+n), the group's bucket as the
// writer believes it (seq/count), the search for poison, the doubt, the
// command of its own, and a lone record's dropped connections.
func describe(m *groupProto) string {
	parts := []string{fmt.Sprintf("stored %d", m.out.Stored)}
	if m.out.Created > 0 {
		parts = append(parts, fmt.Sprintf("created %d", m.out.Created))
	}
	if len(m.out.Poison) > 0 {
		parts = append(parts, fmt.Sprintf("parked %d", len(m.out.Poison)))
	}
	parts = append(parts, fmt.Sprintf("left %d", len(m.recs)))
	if m.p != nil {
		parts = append(parts, fmt.Sprintf("p %d/%d+%d", m.p.seq, m.p.count, m.p.n))
	}
	parts = append(parts, fmt.Sprintf("bucket %d/%d", m.st.seq, m.st.count))
	if m.suspect > 0 {
		parts = append(parts, fmt.Sprintf("limit %d suspect %d", m.limit, m.suspect))
	}
	if m.doubt {
		parts = append(parts, "doubt")
	}
	if m.ownCommand() {
		parts = append(parts, "own")
	}
	if m.lone > 0 {
		parts = append(parts, fmt.Sprintf("lone %d", m.lone))
	}
	return strings.Join(parts, ", ")
}

func runRows(t *testing.T, rows []protoRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			m := newProto(r.recs, r.state)
			var got []string
			for _, e := range r.events {
				got = append(got, m.next(e).String())
			}
			if strings.Join(got, " | ") != strings.Join(r.want, " | ") {
				t.Errorf("actions\n got %q\nwant %q", got, r.want)
			}
			if d := describe(m); d != r.then {
				t.Errorf("state\n got %s\nwant %s", d, r.then)
			}
			if r.check != nil {
				r.check(t, m)
			}
		})
	}
}

func parkedFor(want ...string) func(*testing.T, *groupProto) {
	return func(t *testing.T, m *groupProto) {
		t.Helper()
		if len(m.out.Poison) != len(want) {
			t.Fatalf("parked %v, want %d", m.out.Poison, len(want))
		}
		for i, w := range want {
			if !strings.Contains(m.out.Poison[i].Reason, w) {
				t.Errorf("parked record %d: %q, want it to say %q", m.out.Poison[i].Index, m.out.Poison[i].Reason, w)
			}
		}
	}
}

func inDoubt(m *groupProto) { m.doubt = true }
func unseen(m *groupProto)  { m.st.known = false }
func full(m *groupProto)    { m.st.count = 10 }
func searching(limit int) func(*groupProto) {
	return func(m *groupProto) { m.limit, m.suspect = limit, len(m.recs) }
}

// Planning: how many records a write takes, and where.
func TestProtocolPlan(t *testing.T) {
	runRows(t, []protoRow{
		{name: "all fit", recs: 3, events: []event{plan}, want: []string{"write"},
			then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "bucket full: the next one", recs: 3, state: full, events: []event{plan}, want: []string{"write"},
			then: "stored 0, left 3, p 1/0+3, bucket 1/0"},
		{name: "records beyond bucket_max_records wait", recs: 12, events: []event{plan}, want: []string{"write"},
			then: "stored 0, left 12, p 0/0+10, bucket 0/0"},
		{name: "bytes: as many as fit", recs: 5, state: func(m *groupProto) { m.size.maxBytes = m.size.header + opElemBytes + 2*(len(m.recs[0].Doc)+9) },
			events: []event{plan}, want: []string{"write"}, then: "stored 0, left 5, p 0/0+2, bucket 0/0"},
		{name: "a record no bucket holds is parked", recs: 2, state: func(m *groupProto) {
			m.size.maxBytes = m.size.header + opElemBytes + len(m.recs[0].Doc) + 9
			m.recs[0] = &parser.Record{Index: 0, Doc: make([]byte, 100)}
		}, events: []event{plan}, want: []string{"write"}, then: "stored 0, parked 1, left 1, p 0/0+1, bucket 0/0",
			check: parkedFor("does not fit in an empty bucket")},
		{name: "searching: limit records, own command", recs: 5, state: searching(2), events: []event{plan},
			want: []string{"write"}, then: "stored 0, left 5, p 0/0+2, bucket 0/0, limit 2 suspect 5, own"},
		{name: "a lone record brings its earlier drops", recs: 1, state: func(m *groupProto) { m.drops = map[int]int{0: 5} },
			events: []event{plan}, want: []string{"write"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, lone 5"},
		{name: "nothing to write", recs: 0, events: []event{plan, plan}, want: []string{"done", "done"},
			then: "stored 0, left 0, bucket 0/0"},
	})
}

// One statement alone: each class of outcome, with and without doubt.
func TestProtocolReplies(t *testing.T) {
	runRows(t, []protoRow{
		{name: "ok creates the bucket", recs: 3, events: []event{plan, ok, plan}, want: []string{"write", "round", "done"},
			then: "stored 3, created 1, left 0, bucket 0/3", check: func(t *testing.T, m *groupProto) {
				if m.st.bytes != 300 {
					t.Errorf("bucket bytes %d, want 300", m.st.bytes)
				}
			}},
		{name: "ok into a bucket of entries", recs: 3, state: func(m *groupProto) { m.st.count = 4 },
			events: []event{plan, ok}, want: []string{"write", "round"}, then: "stored 3, left 0, bucket 0/7"},
		{name: "ok clears the doubt", recs: 3, state: inDoubt, events: []event{plan, ok}, want: []string{"write", "round"},
			then: "stored 3, created 1, left 0, bucket 0/3"},

		{name: "duplicate: read, the bucket moved on", recs: 3, events: []event{plan, reply(errDup), bucketRead{found: true, count: 8}, plan},
			want: []string{"write", "read", "round", "write"}, then: "stored 0, left 3, p 0/8+2, bucket 0/8"},
		{name: "duplicate: read, full, next bucket", recs: 3, events: []event{plan, reply(errDup), bucketRead{found: true, count: 10}, plan},
			want: []string{"write", "read", "round", "write"}, then: "stored 0, left 3, p 1/0+3, bucket 1/0"},
		{name: "duplicate on a group not seen: read its newest bucket", recs: 3, state: unseen,
			events: []event{plan, reply(errDup), bucketRead{found: true, seq: 4, count: 2}, plan},
			want:   []string{"write", "read newest", "round", "write"}, then: "stored 0, left 3, p 4/2+3, bucket 4/2"},
		{name: "duplicate in doubt: read the entries, found applied", recs: 3, state: inDoubt,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 3, applied: 3}, plan},
			want:   []string{"write", "read entries", "round", "done"}, then: "stored 3, left 0, bucket 0/3"},
		{name: "duplicate in doubt: part of a larger write applied", recs: 3, state: inDoubt,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 1, applied: 1}, plan},
			want:   []string{"write", "read entries", "round", "write"}, then: "stored 1, left 2, p 0/1+2, bucket 0/1"},
		{name: "duplicate unexplained once: again", recs: 3, events: []event{plan, reply(errDup), bucketRead{found: true, count: 0}, plan},
			want: []string{"write", "read", "round", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "duplicate unexplained twice: split", recs: 3,
			events: []event{plan, reply(errDup), bucketRead{found: true}, plan, reply(errDup), bucketRead{found: true}, plan},
			want:   []string{"write", "read", "round", "write", "read", "round", "write"},
			then:   "stored 0, left 3, p 0/0+2, bucket 0/0, limit 2 suspect 3, own"},
		{name: "duplicate unexplained twice alone: parked", recs: 1,
			events: []event{plan, reply(errDup), bucketRead{found: true}, plan, reply(errDup), bucketRead{found: true}, plan},
			want:   []string{"write", "read", "round", "write", "read", "round", "done"},
			then:   "stored 0, parked 1, left 0, bucket 0/0", check: parkedFor("refused by MongoDB: write exception: write errors: [E11000 duplicate key")},
		{name: "duplicate: the read fails", recs: 3, state: inDoubt,
			events: []event{plan, reply(errDup), bucketRead{found: true, seq: 0, count: 5, gone: true, err: errTimeout}},
			want:   []string{"write", "read entries", "fail"}, then: "stored 0, left 3, p 0/0+3, bucket 0/5, doubt"},

		{name: "conflict: back off, no doubt", recs: 3, events: []event{plan, reply(errConflict), plan, reply(errConflict)},
			want: []string{"write", "backoff 1", "write", "backoff 2"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "election: back off in doubt", recs: 3, events: []event{plan, reply(errElection), plan},
			want: []string{"write", "backoff 1", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt"},
		{name: "timeout: back off in doubt", recs: 3, events: []event{plan, reply(errTimeout)},
			want: []string{"write", "backoff 1"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt"},
		{name: "attempts count from each new write", recs: 12, events: []event{plan, reply(errElection), plan, ok, plan, reply(errElection)},
			want: []string{"write", "backoff 1", "write", "round", "write", "backoff 1"},
			then: "stored 10, created 1, left 2, p 1/0+2, bucket 1/0, doubt"},

		{name: "poison: split in halves", recs: 3, events: []event{plan, reply(errDollar), plan},
			want: []string{"write", "round", "write"}, then: "stored 0, left 3, p 0/0+2, bucket 0/0, limit 2 suspect 3, own"},
		{name: "too large: split in halves", recs: 5, events: []event{plan, reply(errTooLarge), plan},
			want: []string{"write", "round", "write"}, then: "stored 0, left 5, p 0/0+3, bucket 0/0, limit 3 suspect 5, own"},
		{name: "poison alone: parked", recs: 1, events: []event{plan, reply(errDollar), plan},
			want: []string{"write", "round", "done"}, then: "stored 0, parked 1, left 0, bucket 0/0",
			check: parkedFor("refused by MongoDB: write exception")},
		{name: "poison found, the halves go on", recs: 2, events: []event{plan, reply(errDollar), plan, reply(errDollar), plan, ok, plan},
			want: []string{"write", "round", "write", "round", "write", "round", "done"},
			then: "stored 1, created 1, parked 1, left 0, bucket 0/1"},
		{name: "poison alone in doubt: fenced, stored already, not parked", recs: 1, state: inDoubt,
			events: []event{plan, reply(errDollar), fenced{stored: map[int]bool{0: true}}, plan},
			want:   []string{"write", "fence bucket", "round", "done"}, then: "stored 1, left 0, bucket 0/0"},
		{name: "poison alone in doubt: fenced, not there, recorded parked, parked", recs: 1, state: inDoubt,
			events: []event{plan, reply(errDollar), fenced{parked: map[int]string{0: "refused by MongoDB: write exception"}}, plan},
			want:   []string{"write", "fence bucket", "round", "done"}, then: "stored 0, parked 1, left 0, bucket 0/0",
			check: parkedFor("refused by MongoDB")},
		{name: "a look after a fence finds records an earlier attempt recorded parked: parked, not written", recs: 3,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 2, foreign: true}, fenced{stored: map[int]bool{0: true}, parked: map[int]string{1: "parked before"}}, plan},
			want:   []string{"write", "read", "fence group", "round", "write"}, then: "stored 1, parked 1, left 1, p 1/0+1, bucket 1/0",
			check: parkedFor("parked before")},
		{name: "poison alone in doubt: the fence fails", recs: 1, state: inDoubt,
			events: []event{plan, reply(errDollar), fenced{err: errTimeout}},
			want:   []string{"write", "fence bucket", "fail"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, doubt"},

		{name: "reply not shown: repeat alone in doubt", recs: 3, events: []event{plan, sharedReply(errNotShown), plan},
			want: []string{"write", "round", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt, own"},
		{name: "reply not shown, repeated: a duplicate reads the entries", recs: 3,
			events: []event{plan, sharedReply(errNotShown), plan, reply(errDup), bucketRead{found: true, count: 3, applied: 3}, plan},
			want:   []string{"write", "round", "write", "read entries", "round", "done"}, then: "stored 3, left 0, bucket 0/3"},
		{name: "alone again once answered alone", recs: 12, state: func(m *groupProto) { m.alone = true },
			events: []event{plan, reply(nil), plan}, want: []string{"write", "round", "write"},
			then: "stored 10, created 1, left 2, p 1/0+2, bucket 1/0"},

		{name: "a reply out of turn ends the flush", recs: 3, events: []event{ok}, want: []string{"fail"},
			then: "stored 0, left 3, bucket 0/0"},
		{name: "a read out of turn ends the flush", recs: 3, events: []event{plan, bucketRead{}}, want: []string{"write", "fail"},
			then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "a look out of turn ends the flush", recs: 3, events: []event{plan, fenced{}}, want: []string{"write", "fail"},
			then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "a group this process has not fenced has buckets: fence it, look again", recs: 3,
			state:  func(m *groupProto) { m.st = &groupState{} },
			events: []event{plan, reply(errDup), bucketRead{found: true, seq: 4, count: 2}, fenced{stored: map[int]bool{2: true}}, plan},
			want:   []string{"write", "read newest", "fence group", "round", "write"}, then: "stored 1, left 2, p 5/0+2, bucket 5/0"},
		{name: "a group this process has not fenced, its first bucket inserted: fenced", recs: 3,
			state:  func(m *groupProto) { m.st = &groupState{} },
			events: []event{plan, ok},
			want:   []string{"write", "round"}, then: "stored 3, created 1, left 0, bucket 0/3",
			check: func(t *testing.T, m *groupProto) {
				if !m.st.fenced {
					t.Error("not fenced after inserting the group's first bucket")
				}
			}},

		{name: "duplicate: the bucket is sealed, next bucket", recs: 3, events: []event{plan, reply(errDup), bucketRead{found: true, count: 2, sealed: true}, plan},
			want: []string{"write", "read", "round", "write"}, then: "stored 0, left 3, p 1/0+3, bucket 1/0"},
		{name: "missed: no bucket, insert it", recs: 3, state: func(m *groupProto) { m.st.count = 2 },
			events: []event{plan, reply(errkind.Missed), bucketRead{}, plan},
			want:   []string{"write", "read", "round", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "duplicate: the chunk's write applied unseen elsewhere, fence and look again", recs: 3,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 2, foreign: true}, fenced{stored: map[int]bool{0: true, 1: true}}, plan},
			want:   []string{"write", "read", "fence group", "round", "write"}, then: "stored 2, left 1, p 1/0+1, bucket 1/0"},
		{name: "in doubt, all found applied and more unseen elsewhere: fence, look, done", recs: 3, state: inDoubt,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 5, applied: 3, foreign: true}, fenced{stored: map[int]bool{0: true, 1: true, 2: true}}, plan},
			want:   []string{"write", "read entries", "fence group", "round", "done"}, then: "stored 3, left 0, bucket 0/5"},
		{name: "in doubt, found applied and unseen elsewhere: both count", recs: 3, state: inDoubt,
			events: []event{plan, reply(errDup), bucketRead{found: true, count: 3, applied: 1, foreign: true}, fenced{stored: map[int]bool{0: true, 2: true}}, plan},
			want:   []string{"write", "read entries", "fence group", "round", "write"}, then: "stored 2, left 1, p 1/0+1, bucket 1/0"},
	})
}

// Dropped connections on a write sent alone: of several records, suspected
// once the server answers a ping; of one record, on the evidence of
// Dropped.
func TestProtocolDrops(t *testing.T) {
	runRows(t, []protoRow{
		{name: "first drop: back off", recs: 3, events: []event{plan, reply(errDrop)},
			want: []string{"write", "backoff 1"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt"},
		{name: "second drop, the server answers: split", recs: 3, events: []event{plan, reply(errDrop), plan, reply(errDrop), pinged(true), plan},
			want: []string{"write", "backoff 1", "write", "ping", "round", "write"},
			then: "stored 0, left 3, p 0/0+2, bucket 0/0, limit 2 suspect 3, doubt, own"},
		{name: "second drop, no answer: back off", recs: 3, events: []event{plan, reply(errDrop), plan, reply(errDrop), pinged(false)},
			want: []string{"write", "backoff 1", "write", "ping", "backoff 2"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt"},
		{name: "drop during a search: ping at once", recs: 4, state: searching(4), events: []event{plan, reply(errDrop), pinged(true)},
			want: []string{"write", "ping", "round"}, then: "stored 0, left 4, bucket 0/0, limit 2 suspect 4, own"},
		{name: "drops count per write", recs: 12, events: []event{plan, reply(errDrop), plan, ok, plan, reply(errDrop)},
			want: []string{"write", "backoff 1", "write", "round", "write", "backoff 1"},
			then: "stored 10, created 1, left 2, p 1/0+2, bucket 1/0, doubt"},

		{name: "a lone record's drop: control, answered, repeat at once", recs: 1, events: []event{plan, reply(errDrop), probeAnswered, plan},
			want: []string{"write", "control 120", "round", "write"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, doubt, lone 1"},
		{name: "control lost: the count starts again, back off", recs: 1, state: func(m *groupProto) { m.drops = map[int]int{0: 5} },
			events: []event{plan, reply(errDrop), probeLost},
			want:   []string{"write", "control 120", "backoff 1"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, doubt"},
		{name: "deadline during the control: the count stands", recs: 1, state: func(m *groupProto) { m.drops = map[int]int{0: 5} },
			events: []event{plan, reply(errDrop), probeEnded},
			want:   []string{"write", "control 120", "backoff 1"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, doubt, lone 5",
			check: func(t *testing.T, m *groupProto) {
				if d := m.outcome().Drops; len(d) != 1 || d[0] != 5 {
					t.Errorf("outcome drops %v, want record 0: 5", d)
				}
			}},
		{name: "the eighth drop: fenced, then parked", recs: 1, state: func(m *groupProto) { m.drops = map[int]int{0: dropsToPark - 1} },
			events: []event{plan, reply(errDrop), probeAnswered, fenced{parked: map[int]string{0: "refused by MongoDB: the server closed the connection on this record alone 8 times in a row"}}, plan},
			want:   []string{"write", "control 120", "fence bucket", "round", "done"}, then: "stored 0, parked 1, left 0, bucket 0/0, lone 8",
			check: parkedFor("closed the connection on this record alone 8 times in a row")},
		{name: "the eighth drop, stored by a write in doubt: not parked", recs: 1, state: func(m *groupProto) { m.drops = map[int]int{0: dropsToPark - 1} },
			events: []event{plan, reply(errDrop), probeAnswered, fenced{stored: map[int]bool{0: true}}, plan},
			want:   []string{"write", "control 120", "fence bucket", "round", "done"}, then: "stored 1, left 0, bucket 0/0, lone 8"},
		{name: "eight drops in a row within one flush", recs: 1,
			events: []event{plan, reply(errDrop), probeAnswered, plan, reply(errDrop), probeAnswered, plan, reply(errDrop), probeAnswered,
				plan, reply(errDrop), probeAnswered, plan, reply(errDrop), probeAnswered, plan, reply(errDrop), probeAnswered,
				plan, reply(errDrop), probeAnswered, plan, reply(errDrop), probeAnswered, fenced{parked: map[int]string{0: "dropped"}}},
			want: []string{"write", "control 120", "round", "write", "control 120", "round", "write", "control 120",
				"round", "write", "control 120", "round", "write", "control 120", "round", "write", "control 120",
				"round", "write", "control 120", "round", "write", "control 120", "fence bucket", "round"},
			then: "stored 0, parked 1, left 0, bucket 0/0, lone 8"},
	})
}

// Statements of several groups in one unordered command: a lost connection
// there says nothing of any one statement's content.
func TestProtocolSharedCommand(t *testing.T) {
	runRows(t, []protoRow{
		{name: "ok", recs: 3, events: []event{plan, replied{shared: true, adds: 10}}, want: []string{"write", "round"},
			then: "stored 3, created 1, left 0, bucket 0/3"},
		{name: "duplicate", recs: 3, events: []event{plan, sharedReply(errDup)}, want: []string{"write", "read"},
			then: "stored 0, left 3, p 0/0+3, bucket 0/0"},
		{name: "a drop: back off, no ping, no split", recs: 3, events: []event{plan, sharedReply(errDrop), plan, sharedReply(errDrop), plan},
			want: []string{"write", "backoff 1", "write", "backoff 2", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt"},
		{name: "a lone record's drop: no control", recs: 1, events: []event{plan, sharedReply(errDrop)},
			want: []string{"write", "backoff 1"}, then: "stored 0, left 1, p 0/0+1, bucket 0/0, doubt"},
		{name: "the command split: its statements go alone, and stay alone while they lose their connection", recs: 3,
			events: []event{plan, replied{err: errDrop, shared: true, split: true}, plan, reply(errDrop)},
			want:   []string{"write", "backoff 1", "write", "backoff 2"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt, own"},
		{name: "split, two losses alone in a row: the server answers, the search starts", recs: 3,
			events: []event{plan, replied{err: errDrop, shared: true, split: true}, plan, reply(errDrop), plan, reply(errDrop), pinged(true), plan},
			want:   []string{"write", "backoff 1", "write", "backoff 2", "write", "ping", "round", "write"},
			then:   "stored 0, left 3, p 0/0+2, bucket 0/0, limit 2 suspect 3, doubt, own"},
		{name: "split, then alone the drops count", recs: 3,
			events: []event{plan, replied{err: errDrop, shared: true, split: true}, plan},
			want:   []string{"write", "backoff 1", "write"}, then: "stored 0, left 3, p 0/0+3, bucket 0/0, doubt, own"},
		{name: "split, and its statement stored", recs: 3, events: []event{plan, replied{shared: true, split: true}, plan},
			want: []string{"write", "round", "done"}, then: "stored 3, created 1, left 0, bucket 0/3, own"},
		{name: "poison in a shared command: split", recs: 4, events: []event{plan, sharedReply(errDollar)},
			want: []string{"write", "round"}, then: "stored 0, left 4, bucket 0/0, limit 2 suspect 4, own"},
	})
}

// What a write that ends early reports for the chunk's next attempt.
func TestProtocolOutcome(t *testing.T) {
	m := newProto(6, nil)
	for _, e := range []event{plan, reply(errDollar), plan, ok, plan, reply(errElection)} {
		m.next(e)
	}
	if out := m.outcome(); out.Stored != 3 || out.Limit != 3 || out.Drops != nil {
		t.Errorf("searching: %+v, want 3 stored, limit 3", out)
	}
	m = newProto(2, nil)
	for _, e := range []event{plan, ok} {
		m.next(e)
	}
	if out := m.outcome(); out.Stored != 2 || out.Limit != 0 || out.Created != 1 {
		t.Errorf("done: %+v, want 2 stored, 1 created, no limit", out)
	}
}

// A command of several statements that loses its connection in two rounds
// in a row has its statements sent alone (if the server answers).
func TestSplitNext(t *testing.T) {
	cases := []struct {
		lost       int
		sharedLost bool
		wantLost   int
		wantSplit  bool
	}{
		{0, false, 0, false},
		{0, true, 1, false},
		{1, true, 2, true},
		{2, true, 3, true},
		{3, false, 0, false},
	}
	for _, c := range cases {
		if lost, split := splitNext(c.lost, c.sharedLost); lost != c.wantLost || split != c.wantSplit {
			t.Errorf("splitNext(%d, %t) = %d, %t; want %d, %t", c.lost, c.sharedLost, lost, split, c.wantLost, c.wantSplit)
		}
	}
}

// The writes of a round go out by collection, up to the batch size per
// command, a write of its own alone.
func TestBatch(t *testing.T) {
	cases := []struct {
		colls []string
		own   []bool
		size  int
		want  string
	}{
		{[]string{"a", "a", "a"}, []bool{false, false, false}, 20, "[[0 1 2]]"},
		{[]string{"a", "a", "a"}, []bool{false, false, false}, 2, "[[0 1] [2]]"},
		{[]string{"a", "a", "a"}, []bool{false, false, false}, 0, "[[0] [1] [2]]"},
		{[]string{"a", "b", "a", "b"}, []bool{false, false, false, false}, 20, "[[0 2] [1 3]]"},
		{[]string{"a", "a", "a"}, []bool{false, true, false}, 20, "[[0 2] [1]]"},
		{[]string{"a", "a"}, []bool{true, true}, 20, "[[0] [1]]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(batch(c.colls, c.own, c.size)); got != c.want {
			t.Errorf("batch(%v, %v, %d) = %s, want %s", c.colls, c.own, c.size, got, c.want)
		}
	}
}

// The evidence of Dropped: answered controls count, a lost one starts
// again, a deadline leaves the count.
func TestCountDrop(t *testing.T) {
	drops := 0
	for i := 1; i < dropsToPark; i++ {
		if countDrop(&drops, probeAnswered) || drops != i {
			t.Fatalf("after %d answered controls: complete or count %d", i, drops)
		}
	}
	if countDrop(&drops, probeEnded) || drops != dropsToPark-1 {
		t.Fatalf("a deadline changed the count to %d", drops)
	}
	if !countDrop(&drops, probeAnswered) {
		t.Fatal("not complete after dropsToPark answered controls")
	}
	if countDrop(&drops, probeLost) || drops != 0 {
		t.Fatalf("a lost control left the count at %d", drops)
	}
}
