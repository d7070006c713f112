package writer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// The executor of the bucket protocol (protocol.go): it sends each round's
// statements as commands and feeds their outcomes back, carrying out the
// reads, pings and controls the protocol asks for.

// rounds runs the writes of ws until every group is done: each round
// plans the next write of every group not done, sends them, and feeds each
// statement's outcome back to its group's protocol, carrying out what the
// protocol asks (a ping, a control, a read) until the next round; the round
// ends with the longest backoff any group asked for.
func (b *Buckets) rounds(ctx context.Context, ws []*groupWrite) error {
	active := ws
	lost := 0 // the rounds in a row in which a command of several statements lost its connection
	for {
		var round []*groupWrite
		if active, round = b.plan(active); len(active) == 0 {
			return nil
		} else if len(round) == 0 {
			return errors.New("bucket write: writes left, none to make")
		}
		cmds := b.commands(round)
		errs := b.send(ctx, cmds)
		sharedLost := false
		for i, c := range cmds {
			sharedLost = sharedLost || len(c) > 1 && errkind.Of(errs[i][0]) == errkind.Lost
		}
		var split bool
		lost, split = splitNext(lost, sharedLost)
		wait, slow, err := b.settleAll(ctx, cmds, errs, split && b.answers(ctx))
		if err != nil {
			return err
		}
		if wait > 0 {
			if err := b.retry.Wait(ctx, wait); err != nil {
				return fmt.Errorf("writing bucket %s: %w", bucketer.BucketID(slow.g.ID, slow.p.seq), slow.err)
			}
		}
	}
}

// settleAll settles every statement of cmds with its error in errs, and
// returns the longest backoff asked for and the write that asked; split
// sends the statements of shared commands alone from now on.
func (b *Buckets) settleAll(ctx context.Context, cmds [][]*groupWrite, errs [][]error, split bool) (wait int, slow *groupWrite, _ error) {
	var fails []error
	for i, c := range cmds {
		for j, w := range c {
			backoff, err := b.settle(ctx, w, replied{err: errs[i][j], shared: len(c) > 1, split: split})
			if err != nil {
				fails = append(fails, err)
			}
			if backoff > wait {
				wait, slow = backoff, w
			}
		}
	}
	return wait, slow, errors.Join(fails...)
}

// plan returns the writes of ws not done, and of them those that write
// this round, their statements built.
func (b *Buckets) plan(ws []*groupWrite) (active, round []*groupWrite) {
	for _, w := range ws {
		if w.onPlan().kind != actWrite {
			continue
		}
		active = append(active, w)
		w.encode()
		round = append(round, w)
	}
	return active, round
}

// send sends each command and returns each statement's error.
func (b *Buckets) send(ctx context.Context, cmds [][]*groupWrite) [][]error {
	errs := make([][]error, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = slices.Repeat([]error{errkind.Recovered(r)}, len(c))
				}
			}()
			ups := make([]Upsert, len(c))
			for j, w := range c {
				ups[j] = w.stmt
			}
			errs[i] = b.store.Upserts(ctx, b.collection(c[0].g), ups)
		}()
	}
	wg.Wait()
	return errs
}

// settle feeds the reply r to w's protocol and carries out what it asks
// until the next round. backoff, above 0, is the attempt number to wait for
// before the write is repeated; an error ends the flush.
func (b *Buckets) settle(ctx context.Context, w *groupWrite, r replied) (backoff int, _ error) {
	r.adds, r.vals, r.bytes = w.adds, w.vals, len(w.stmt.Update)
	w.putBuffer()
	a := w.onReply(r)
	for {
		switch a.kind {
		case actPing:
			a = w.onPing(b.answers(ctx))
		case actControl:
			a = w.onProbe(sendControl(ctx, b.store, b.collection(w.g), a.bytes))
		case actRead:
			rd, err := b.read(ctx, w, a)
			if err != nil && !rd.found {
				return 0, err
			}
			a = w.onRead(rd)
		case actFence:
			a = w.onFenced(b.refence(ctx, w, a.bucket))
		case actBackoff:
			return a.attempt, nil
		case actFail:
			return 0, a.err
		default:
			return 0, nil
		}
	}
}

// answers reports whether the server answers a ping before the flush's
// deadline.
func (b *Buckets) answers(ctx context.Context) bool {
	return ctx.Err() == nil && b.store.Ping(ctx) == nil
}

// commands splits the writes of a round into commands: by collection, up
// to WriteBatch statements each, a write to be sent alone in one of its own.
func (b *Buckets) commands(round []*groupWrite) [][]*groupWrite {
	size := b.Batch()
	colls, own := make([]string, len(round)), make([]bool, len(round))
	for i, w := range round {
		colls[i], own[i] = b.collection(w.g), w.ownCommand()
	}
	var cmds [][]*groupWrite
	for _, idx := range batch(colls, own, size) {
		c := make([]*groupWrite, len(idx))
		for j, i := range idx {
			c[j] = round[i]
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// refence fences the earlier writes of w's group, then looks for what
// they stored: it seals every open bucket of the group; with bucket (the
// record in doubt, w's first, is to be parked, not written again) it also
// inserts the group's next bucket as a placeholder, the one place a write
// sent before could still insert, which the plugin's own next write would
// otherwise take. A record to park that the look does not find stored is
// then recorded parked in the placeholder before it goes to the dead
// letters: a later attempt, in this process or another, finds it there
// even while the dead letter's insert is still on its way, and parks the
// record again instead of writing it.
func (b *Buckets) refence(ctx context.Context, w *groupWrite, bucket bool) fenced {
	coll := b.collection(w.g)
	next := -1
	err := b.seal(ctx, coll, []*bucketer.Group{w.g})
	if err == nil && bucket {
		var newest bson.Raw
		if newest, err = b.findOne(ctx, w.g, b.groupFilter(w.g), Query{Projection: fillProjection, Sort: bySeqDesc, Limit: 1}); err == nil {
			next = 0
			if s, ok := newest.Lookup(model.Seq).AsInt64OK(); ok && newest != nil {
				next = int(s) + 1
			}
			up := []Upsert{b.placeholder(w.g, next)}
			err = b.retry.Do(ctx, func() error { return b.store.Upserts(ctx, coll, up)[0] })
		}
	}
	if err != nil {
		return fenced{err: fmt.Errorf("fencing the earlier writes of group %s: %w", w.g.ID, err)}
	}
	l, err := b.stored(ctx, w.chunkID, []*bucketer.Group{w.g}, w.parked)
	if err != nil {
		return fenced{err: err}
	}
	f := fenced{stored: l.stored, where: l.where[b.groupKey(w.g)], parked: l.parked}
	if next >= 0 && len(w.recs) > 0 {
		i := w.recs[0].Index
		if !f.stored[i] && f.parked[i] == "" {
			reason := refusal(w.cause.Error())
			if err := b.recordParked(ctx, w, next, w.recs[0], reason); err != nil {
				return fenced{err: err}
			}
			if f.parked == nil {
				f.parked = map[int]string{}
			}
			f.parked[i] = reason
		}
	}
	return f
}

// recordParked records record r of w's chunk parked in placeholder seq,
// and reads the placeholder back: a reply lost leaves the statement's
// outcome unknown, and a fence of another attempt may have sealed the
// placeholder first (then the record is not parked now: the flush ends
// and the next attempt looks again).
func (b *Buckets) recordParked(ctx context.Context, w *groupWrite, seq int, r *parser.Record, reason string) error {
	i := r.Index
	up := []Upsert{b.parkedIn(w.g, seq, w.tag, r, reason)}
	err := b.retry.Do(ctx, func() error { return b.store.Upserts(ctx, b.collection(w.g), up)[0] })
	if ctx.Err() != nil {
		return fmt.Errorf("recording record %d parked in bucket %s: %w", i, bucketer.BucketID(w.g.ID, seq), err)
	}
	d, rerr := b.findOne(ctx, w.g, idFilter(bucketer.BucketID(w.g.ID, seq)), Query{Projection: parkedProjection})
	if rerr != nil {
		return fmt.Errorf("reading bucket %s for record %d parked: %w", bucketer.BucketID(w.g.ID, seq), i, rerr)
	}
	if _, ok := parkedIn(d, w.tag, w.g.Records)[i]; !ok {
		if err == nil {
			err = errors.New("not recorded")
		}
		return fmt.Errorf("recording record %d parked in bucket %s: another attempt fenced it first: %w", i, bucketer.BucketID(w.g.ID, seq), err)
	}
	return nil
}

// groupWrite is the writing of one group's records: its protocol, and the
// statement of the write it planned.
type groupWrite struct {
	groupProto
	b       *Buckets
	g       *bucketer.Group
	chunkID string
	tag     uint32
	stmt    Upsert
	buf     *[]byte           // holds stmt.Update
	adds    int               // the bytes the write adds
	vals    []bucketer.Values // the keep_values values it adds
}

func (b *Buckets) newGroupWrite(chunkID string, j Job, st *groupState) *groupWrite {
	return &groupWrite{groupProto: newGroupProto(st, b.sizing(j.Group), j), b: b, g: j.Group, chunkID: chunkID, tag: ChunkTag(chunkID)}
}

// sizing is what decides how many of g's records one write takes.
func (b *Buckets) sizing(g *bucketer.Group) sizing {
	return sizing{maxRecords: b.cfg.MaxRecords, maxBytes: b.cfg.MaxBytes, header: b.header(g),
		extra: (len(b.grouper.CountBy) + len(b.grouper.KeepValues)) * 160}
}
