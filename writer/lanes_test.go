package writer

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

func numbered(n int) []*parser.Record {
	rs := make([]*parser.Record, n)
	for i := range rs {
		rs[i] = &parser.Record{Index: i, Time: time.Unix(0, 0), Doc: bsoncore.NewDocumentBuilder().AppendInt32("n", int32(i)).Build()}
	}
	return rs
}

// split plans the buckets a group's records fill from the bucket it is
// filling: the current one topped up, then new ones; a record too large for
// an empty bucket ends the plan in a last part, whose write parks it.
func TestSplit(t *testing.T) {
	z := sizing{maxRecords: 10, maxBytes: 1 << 20, header: 600}
	big := numbered(25)
	big[13].Doc = make([]byte, 2<<20)
	for _, c := range []struct {
		name              string
		recs              []*parser.Record
		seq, count, bytes int
		want              string
	}{
		{"fits the current bucket", numbered(4), 3, 2, 100, "3@2:4"},
		{"tops up, then new buckets", numbered(25), 3, 6, 100, "3@6:4 4@0:10 5@0:10 6@0:1"},
		{"a full bucket is skipped", numbered(12), 0, 10, 100, "1@0:10 2@0:2"},
		{"a fresh group", numbered(20), 0, 0, 0, "0@0:10 1@0:10"},
		{"bytes end a bucket", numbered(3), 0, 1, 1<<20 - 600 - opElemBytes - 2*(13+9), "0@1:2 1@0:1"},
		{"a record too large ends the plan", big, 0, 0, 0, "0@0:10 1@0:3 2@0:12"},
	} {
		var got string
		for i, p := range z.split(c.recs, c.seq, c.count, c.bytes) {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%d@%d:%d", p.seq, p.count, len(p.recs))
		}
		if got != c.want {
			t.Errorf("%s: split = %s, want %s", c.name, got, c.want)
		}
	}
}

// The lanes of one group keep three rules (see lanes): while a lane is in
// doubt only lanes in doubt write; one bucket takes one write a round; and a
// position a lane took is no other lane's earlier write.
func TestLaneRules(t *testing.T) {
	b := NewBuckets(nil, BucketConfig{MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true}, &bucketer.Config{}, Retry{})
	g := &bucketer.Group{ID: "g", Key: bsoncore.NewDocumentBuilder().AppendString("tag", "t").Build()}
	l, cl := &lanes{group: "g"}, claims{}
	lane := func(seq, count int, recs []*parser.Record) *groupWrite {
		w := b.newGroupWrite("chunk", Job{Group: g, Recs: recs}, &groupState{seq: seq, count: count, known: true})
		w.lanes, w.claims = l, cl
		return w
	}
	rs := numbered(30)
	a, c, d := lane(0, 0, rs[:10]), lane(1, 0, rs[10:20]), lane(2, 0, rs[20:])

	active, round := b.plan([]*groupWrite{a, c, d})
	if len(active) != 3 || len(round) != 3 {
		t.Fatalf("no lane in doubt: %d active, %d writing, want 3 and 3", len(active), len(round))
	}
	for _, w := range round {
		w.putBuffer()
		w.onReply(replied{err: errDup})
		w.phase = idle
	}
	// c is in doubt (a write of it may have applied): only c writes.
	c.doubt = true
	a.p, d.p = nil, nil
	active, round = b.plan([]*groupWrite{a, c, d})
	if len(active) != 3 || len(round) != 1 || round[0] != c {
		t.Errorf("c in doubt: %d active, %d writing (want 3, and c alone)", len(active), len(round))
	}
	for _, w := range round {
		w.putBuffer()
		w.hold()
	}
	// Settled, two lanes plan the same bucket: one writes, one waits.
	c.doubt, c.p = false, nil
	a.st.seq, a.st.count = 2, 0
	active, round = b.plan([]*groupWrite{a, d})
	if len(active) != 2 || len(round) != 1 || round[0] != a {
		t.Errorf("two lanes on bucket 2: %d active, %d writing (want 2, and the first alone)", len(active), len(round))
	}
	if d.phase != idle || d.p == nil {
		t.Errorf("the lane held is in phase %d with plan %v, want idle with its plan kept", d.phase, d.p)
	}
	// A write taken at a position is no other lane's.
	a.st.seq, a.st.count, a.p = 2, 0, &part{seq: 2, count: 0, n: 10}
	a.phase = sent
	a.onReply(replied{adds: 100})
	if !cl.taken(2, 0) || cl.taken(2, 10) || claims(nil).taken(2, 0) {
		t.Error("taken positions: want {2, 0} alone, and none without claims")
	}
}

// An earlier attempt's writes in doubt come first, each at its position,
// in doubt, with those of its records still to write; a doubt whose records
// were all found stored is dropped. The other records go on from where the
// furthest doubt's bucket ends if its write applied.
func TestDoubtWrites(t *testing.T) {
	b := NewBuckets(nil, BucketConfig{MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true}, &bucketer.Config{}, Retry{})
	g := &bucketer.Group{ID: "g", Key: bsoncore.NewDocumentBuilder().AppendString("tag", "t").Build()}
	rs := numbered(30)
	var todo []*parser.Record
	for _, r := range rs {
		if r.Index < 20 || r.Index > 24 { // 20-24 found stored
			todo = append(todo, r)
		}
	}
	st := &groupState{seq: 1, count: 4, bytes: 500, known: true}
	j := Job{Group: g, Recs: todo, Doubts: []Doubt{
		{Seq: 3, Count: 2, Bytes: 300, Adds: 50, Recs: []int{10, 11, 12, 13, 14}},
		{Seq: 4, Count: 0, Recs: []int{20, 21, 22, 23, 24}},
		{Seq: 2, Count: 0, Recs: []int{0, 1, 2}},
	}}
	ws := b.laneWrites(nil, "chunk", j, st, claims{})
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%d@%d:%d-%d doubt=%v", w.st.seq, w.st.count, w.recs[0].Index, w.recs[len(w.recs)-1].Index, w.doubt))
		if w.lanes == nil || w.lanes != ws[0].lanes {
			t.Errorf("write %s is not one of the group's lanes", got[len(got)-1])
		}
	}
	want := []string{
		"3@2:10-14 doubt=true",
		"2@0:0-2 doubt=true",
		"3@7:3-5 doubt=false",  // where bucket 3 ends if the doubt's write applied
		"4@0:6-25 doubt=false", // records 6-9, 15-19 and 25
		"5@0:26-29 doubt=false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writes:\n got %v\nwant %v", got, want)
	}
	if w := ws[2]; w.st.bytes != 350 {
		t.Errorf("the records after the doubts start from %d bytes, want 350", w.st.bytes)
	}
	if w := ws[0]; w.st.bytes != 300 || !w.st.known {
		t.Errorf("the doubt's write starts from %d bytes (known %v), want 300", w.st.bytes, w.st.known)
	}
}

// Of identical records the lookup may find any copy stored: a doubt whose
// own records were matched elsewhere, its position not found holding the
// chunk's entries, takes copies still to write; one whose position was
// found is settled.
func TestDoubtWritesIdentical(t *testing.T) {
	b := NewBuckets(nil, BucketConfig{MaxRecords: 10, MaxBytes: 1 << 20, Idempotent: true}, &bucketer.Config{}, Retry{})
	same := bsoncore.NewDocumentBuilder().AppendString("msg", "health check").Build()
	g := &bucketer.Group{ID: "g", Key: bsoncore.NewDocumentBuilder().AppendString("tag", "t").Build()}
	for i := range 6 {
		g.Records = append(g.Records, &parser.Record{Index: i, Time: time.Unix(0, 0), Doc: same})
	}
	j := Job{Group: g, Recs: g.Records[3:], Doubts: []Doubt{{Seq: 1, Count: 0, Recs: []int{0, 1, 2}}}}
	for _, c := range []struct {
		name   string
		claims claims
		want   string
	}{
		{"position not found", claims{{0, 0}: true}, "[1@0:3-5 doubt=true]"},
		{"position found", claims{{0, 0}: true, {1, 0}: true}, "[1@3:3-5 doubt=false]"},
	} {
		st := &groupState{seq: 1, count: 3, known: true}
		var got []string
		for _, w := range b.laneWrites(nil, "chunk", j, st, c.claims) {
			got = append(got, fmt.Sprintf("%d@%d:%d-%d doubt=%v", w.st.seq, w.st.count, w.recs[0].Index, w.recs[len(w.recs)-1].Index, w.doubt))
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s: writes %v, want %s", c.name, got, c.want)
		}
	}
}
