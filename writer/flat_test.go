package writer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Events of the flat rows: the outcome of each action in turn.
type (
	putOut     struct{ err error }
	controlOut struct{ p probe }
	pingOut    bool
	findOut    struct{ stored, standIns []int }
	backoffOut struct{ err error }
	fenceOut   struct {
		stored bool
		err    error
	}
)

// flatRow is one transition sequence: an insert of docs documents (or a
// replace), fed events in order, answering each with the action of want
// (kind and, for put and find, the documents); then its refusals, its
// documents existing before, its limit and its drops to give back.
type flatRow struct {
	name    string
	docs    int
	replace bool
	limit   int
	drops   map[int]int
	events  []any
	want    []string
	refused string // "index: reason prefix" joined by "; "
	existed int
	endLim  int
	lost    map[int]int
}

// errBulkDup: the server names document 0 of the command as existing.
var errBulkDup = mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Index: 0, Code: 11000, Message: "E11000 duplicate key"}}}}

// errBulkPoison: the server refuses document 1 of the command.
var errBulkPoison = mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Index: 1, Code: 52, Message: "field name starts with $"}}}}

func put(err error) putOut     { return putOut{err} }
func found(idx ...int) findOut { return findOut{stored: idx} }

// answeredN is n lost connections of a document alone, each followed by
// an answered control and an empty look-up.
func answeredN(n int) []any {
	var out []any
	for range n {
		out = append(out, put(errDrop), controlOut{p: probeAnswered}, found())
	}
	return out
}

func answeredWant(n int) []string {
	var out []string
	for range n {
		out = append(out, "control", "find [0]", "put [0]")
	}
	return out
}

var flatRows = []flatRow{
	{name: "stored at once", docs: 3, events: []any{put(nil)}, want: []string{"done"}},
	{name: "a document refused by index is parked, the others put again", docs: 3,
		events: []any{put(errBulkPoison), found(), put(nil)},
		want:   []string{"find [0 1 2]", "put [0 2]", "done"}, refused: "1: refused by MongoDB: field name starts with $"},
	{name: "one named existing, the other found is the insert's own", docs: 2,
		events: []any{put(errBulkDup), found(0, 1)}, want: []string{"find [0 1]", "done"}, existed: 1},
	{name: "a lost reply: every document found counts as existing", docs: 2,
		events: []any{put(errDrop), found(0, 1)}, want: []string{"find [0 1]", "done"}, existed: 2},
	{name: "some found after a lost reply: the rest put again at once", docs: 3,
		events: []any{put(errDrop), found(1), put(nil)}, want: []string{"find [0 1 2]", "put [0 2]", "done"}, existed: 1},
	{name: "progress starts the count of lost connections again", docs: 3,
		events: []any{put(errDrop), found(1), put(errDrop), found(), backoffOut{}, put(nil)},
		want:   []string{"find [0 1 2]", "put [0 2]", "find [0 2]", "backoff 1", "put [0 2]", "done"}, existed: 1},
	{name: "a busy server: backoff, then again", docs: 2,
		events: []any{put(errElection), found(), backoffOut{}, put(nil)},
		want:   []string{"find [0 1]", "backoff 1", "put [0 1]", "done"}},
	{name: "a document alone on a busy server: backoff, no control", docs: 1,
		events: []any{put(errElection), found(), backoffOut{}, put(nil)},
		want:   []string{"find [0]", "backoff 1", "put [0]", "done"}},
	{name: "the deadline passes in a backoff: fail naming the write's error", docs: 2,
		events: []any{put(errElection), found(), backoffOut{context.DeadlineExceeded}},
		want:   []string{"find [0 1]", "backoff 1", "fail inserting into logs: (NotWritablePrimary)"}},
	{name: "one lost connection of several: not yet suspect", docs: 2,
		events: []any{put(errDrop), found(), backoffOut{}, put(nil)},
		want:   []string{"find [0 1]", "backoff 1", "put [0 1]", "done"}},
	{name: "two lost connections in a row, the server answering: split", docs: 4,
		events: []any{put(errDrop), found(), backoffOut{}, put(errDrop), pingOut(true), found(), put(nil), put(nil)},
		want:   []string{"find [0 1 2 3]", "backoff 1", "put [0 1 2 3]", "ping", "find [0 1 2 3]", "put [0 1]", "put [2 3]", "done"}, endLim: 2},
	{name: "two lost connections, the server not answering: backoff, no split", docs: 2,
		events: []any{put(errDrop), found(), backoffOut{}, put(errDrop), pingOut(false), found(), backoffOut{}, put(nil)},
		want:   []string{"find [0 1]", "backoff 1", "put [0 1]", "ping", "find [0 1]", "backoff 2", "put [0 1]", "done"}},
	{name: "a search under way: suspect from the first lost connection", docs: 2, limit: 4,
		events: []any{put(errDrop), pingOut(true), found(), put(nil), put(nil)},
		want:   []string{"ping", "find [0 1]", "put [0]", "put [1]", "done"}, endLim: 1},
	{name: "refused without an index: split to the document, parked", docs: 2,
		events: []any{put(errTooLarge), found(), put(nil), put(errTooLarge), found()},
		want:   []string{"find [0 1]", "put [0]", "put [1]", "find [1]", "done"}, refused: "1: refused by MongoDB: update: an inserted document is too large", endLim: 1},
	{name: "a document alone dropped 8 times, the control answered each time: fenced, parked", docs: 1,
		events:  append(answeredN(dropsToPark), fenceOut{}),
		want:    append(answeredWant(dropsToPark-1), "control", "find [0]", "fence", "done"),
		refused: "0: refused by MongoDB: the server closed the connection on this record alone 8 times in a row", lost: map[int]int{0: 8}},
	{name: "the drops of an earlier attempt count", docs: 1, drops: map[int]int{0: dropsToPark - 1},
		events:  append(answeredN(1), fenceOut{}),
		want:    []string{"control", "find [0]", "fence", "done"},
		refused: "0: refused by MongoDB: the server closed the connection on this record alone 8 times", lost: map[int]int{0: 8}},
	{name: "split: the second half, a document alone, brings its earlier drops", docs: 2, limit: 4, drops: map[int]int{1: dropsToPark - 1},
		events:  []any{put(errDrop), pingOut(true), found(), put(nil), put(errDrop), controlOut{p: probeAnswered}, found(), fenceOut{}},
		want:    []string{"ping", "find [0 1]", "put [0]", "put [1]", "control", "find [1]", "fence", "done"},
		refused: "1: refused by MongoDB: the server closed the connection on this record alone 8 times", endLim: 1, lost: map[int]int{1: 8}},
	{name: "a stand-in found: an earlier attempt fenced the record, parked", docs: 2,
		events: []any{put(errDrop), findOut{standIns: []int{1}}, put(nil)}, want: []string{"find [0 1]", "put [0]", "done"},
		refused: "1: " + fencedEarlier},
	{name: "the fence finds the document itself: stored, not parked", docs: 1, drops: map[int]int{0: dropsToPark - 1},
		events: append(answeredN(1), fenceOut{stored: true}), want: []string{"control", "find [0]", "fence", "done"}, existed: 1,
		lost: map[int]int{0: 8}},
	{name: "the fence fails: backoff, then the insert again", docs: 1, drops: map[int]int{0: dropsToPark - 1},
		events: append(answeredN(1), fenceOut{err: errDrop}, backoffOut{}), want: []string{"control", "find [0]", "fence", "backoff 1", "put [0]"}},
	{name: "a replace alone dropped 8 times: fenced at its version, parked", docs: 1, replace: true, drops: map[int]int{0: dropsToPark - 1},
		events:  append(answeredN(1), fenceOut{}),
		want:    []string{"control", "find [0]", "fence", "done"},
		refused: "0: refused by MongoDB: the server closed the connection on this record alone 8 times", lost: map[int]int{0: 8}},
	{name: "a control lost: no evidence, the count starts again, backoff", docs: 1, drops: map[int]int{0: 5},
		events: []any{put(errDrop), controlOut{p: probeLost}, found(), backoffOut{}, put(nil)},
		want:   []string{"control", "find [0]", "backoff 1", "put [0]", "done"}},
	{name: "the deadline passes with drops counted: given back", docs: 1, drops: map[int]int{0: 3},
		events: []any{put(errDrop), controlOut{p: probeEnded}, found(), backoffOut{context.DeadlineExceeded}},
		want:   []string{"control", "find [0]", "backoff 1", "fail inserting into logs:"}, lost: map[int]int{0: 3}},
	{name: "a document alone found stored after a lost connection: not parked", docs: 1, drops: map[int]int{0: dropsToPark - 1},
		events: []any{put(errDrop), controlOut{p: probeAnswered}, found(0)}, want: []string{"control", "find [0]", "done"}, existed: 1},
	{name: "a failed look-up: nothing counted, backoff on its error", docs: 2,
		events: []any{put(errBulkDup), findOut{stored: []int{-1}}, backoffOut{context.DeadlineExceeded}},
		want:   []string{"find [0 1]", "backoff 1", "fail inserting into logs: find failed"}},
	{name: "replace: DuplicateKey is a version as new or newer stored before; the others found are this write's", docs: 2, replace: true,
		events: []any{put(errBulkDup), found(0, 1)}, want: []string{"find [0 1]", "done"}, existed: 1},
}

func describeFlat(a flatAction) string {
	switch a.kind {
	case flatPut, flatFind:
		return fmt.Sprintf("%s %v", a.kind, a.pending)
	case flatBackoff:
		return fmt.Sprintf("backoff %d", a.attempt)
	case flatFail:
		return "fail " + a.err.Error()
	}
	return a.kind.String()
}

func runFlatRow(r flatRow) (got []string, m *flatProto, err error) {
	docs := make([]Doc, r.docs)
	for i := range docs {
		docs[i].Raw = make([]byte, 10)
	}
	m = &flatProto{coll: "logs", docs: docs, replace: r.replace, limit: r.limit, drops: r.drops}
	all := make([]int, r.docs)
	for i := range all {
		all[i] = i
	}
	a := m.begin(all)
	if a.kind != flatPut || !slices.Equal(a.pending, all) {
		return nil, m, fmt.Errorf("begin: %s", describeFlat(a))
	}
	for i, e := range r.events {
		switch e := e.(type) {
		case putOut:
			if a.kind != flatPut {
				return got, m, fmt.Errorf("event %d: a put's outcome while %s", i, describeFlat(a))
			}
			a = m.onPut(e.err)
		case controlOut:
			a = m.onControl(e.p)
		case pingOut:
			a = m.onPing(bool(e))
		case findOut:
			if slices.Equal(e.stored, []int{-1}) {
				a = m.onFind(nil, fmt.Errorf("find failed"))
				break
			}
			stored := map[int]holding{}
			for _, s := range e.stored {
				stored[s] = heldByDoc
			}
			for _, s := range e.standIns {
				stored[s] = heldByStandIn
			}
			a = m.onFind(stored, nil)
		case backoffOut:
			a = m.onBackoff(e.err)
		case fenceOut:
			a = m.onFenced(e.stored, e.err)
		}
		got = append(got, describeFlat(a))
	}
	return got, m, nil
}

// Each row of the flat protocol, without a server: the actions it asks,
// and what it found.
func TestFlatProtocol(t *testing.T) {
	for _, r := range flatRows {
		got, m, err := runFlatRow(r)
		if err != nil {
			t.Errorf("%s: %v (so far %q)", r.name, err, got)
			continue
		}
		if len(got) != len(r.want) {
			t.Errorf("%s: actions\n got %q\nwant %q", r.name, got, r.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], r.want[i]) {
				t.Errorf("%s: action %d is %q, want %q\n got %q", r.name, i, got[i], r.want[i], got)
			}
		}
		var refused []string
		for _, f := range m.refused {
			refused = append(refused, fmt.Sprintf("%d: %s", f.Index, f.Reason))
		}
		if joined := strings.Join(refused, "; "); !strings.HasPrefix(joined, r.refused) || (r.refused == "") != (joined == "") {
			t.Errorf("%s: refused %q, want %q", r.name, joined, r.refused)
		}
		wantLimit := r.limit
		if r.endLim != 0 {
			wantLimit = r.endLim
		}
		if m.existed != r.existed || m.limit != wantLimit {
			t.Errorf("%s: existed %d, limit %d; want %d, %d", r.name, m.existed, m.limit, r.existed, wantLimit)
		}
		if fmt.Sprint(m.lost) != fmt.Sprint(r.lost) && !(len(m.lost) == 0 && len(r.lost) == 0) {
			t.Errorf("%s: drops given back %v, want %v", r.name, m.lost, r.lost)
		}
	}
}
