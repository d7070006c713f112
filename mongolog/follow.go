package mongolog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Follower prints the records of a query as they land, poll by poll, each
// once: a poll re-reads the records whose time is at most Lag behind the
// newest one printed (or behind the current time, when that is earlier),
// so a write that lands after a newer one is not passed over, and skips
// those it printed before, told apart by position.
//
// A position is the record's document and, in a bucket, its entry. The
// test server cannot return an entry's index in the array ($unwind's
// includeArrayIndex), so an entry is named by its bucket, its content and
// which copy of that content in the bucket it is: buckets only grow at
// the end, and a query keeps or drops identical entries alike, so the
// n-th copy of an entry is always the same element. Positions of records
// older than the overlap are forgotten: memory holds the records of the
// last Lag, not all that was printed.
//
// A record that lands more than Lag behind the newest printed time is
// never printed by follow (query with --from finds it).
type Follower struct {
	r     *Reader
	q     Query
	lag   time.Duration
	emit  func(bson.Raw) error
	polls uint64

	newest time.Time // the newest record time printed
	cutoff time.Time // records older than this are not read again
	seen   map[position]*printed
	counts map[bucketRef]int64 // bucket mode: each bucket's count at the last poll
	pruned int                 // len(seen) after the last pruning
}

type bucketRef struct{ coll, id string }

// position is where a record is stored: a flat document (entry zero) or
// the entry of a bucket with this content (see Follower).
type position struct {
	doc   bucketRef
	entry [16]byte
}

// printed is what is known of the records at one position.
type printed struct {
	ts      time.Time
	printed int    // how many copies were printed
	copies  int    // how many copies the poll numbered poll returned
	poll    uint64 // the poll copies counts
}

// Follower returns a follower of q with overlap lag, emitting to emit.
func (r *Reader) Follower(q Query, lag time.Duration, emit func(bson.Raw) error) *Follower {
	q.Limit = 0
	return &Follower{r: r, q: q, lag: max(lag, 0), emit: emit,
		seen: map[position]*printed{}, counts: map[bucketRef]int64{}}
}

// Remembered is how many positions the follower holds.
func (f *Follower) Remembered() int { return len(f.seen) }

// Poll prints what landed since the last poll (the first: all from the
// query's start), oldest first.
func (f *Follower) Poll(ctx context.Context) error {
	f.polls++
	q := f.q
	if f.cutoff.After(q.From) {
		q.From = f.cutoff
	}
	colls, err := f.r.Collections(ctx, q.From, q.To)
	if err != nil {
		return fmt.Errorf("listing the collections of %s: %w", f.r.Cfg.Collection, err)
	}
	counts := map[bucketRef]int64{}
	for _, coll := range colls {
		var err error
		if f.r.Cfg.Mode == model.ModeFlat {
			err = f.pollFlat(ctx, coll, q)
		} else {
			err = f.pollBuckets(ctx, coll, q, counts)
		}
		if err != nil {
			return err
		}
	}
	if f.r.Cfg.Mode != model.ModeFlat {
		f.counts = counts // buckets no longer in the overlap are forgotten
	}
	f.advance()
	f.prune()
	return nil
}

// advance moves the cutoff to Lag behind the newest time printed, or the
// current time when that is earlier (a record stamped in the future does
// not hide the present), never back.
func (f *Follower) advance() {
	if f.newest.IsZero() {
		return
	}
	at := f.newest
	if now := time.Now(); now.Before(at) {
		at = now
	}
	if c := at.Add(-f.lag); c.After(f.cutoff) {
		f.cutoff = c
	}
}

// prune forgets the positions of records older than the cutoff: no poll
// reads them again.
func (f *Follower) prune() {
	for p, s := range f.seen {
		if s.ts.Before(f.cutoff) {
			delete(f.seen, p)
		}
	}
	f.pruned = len(f.seen)
}

// take emits rec, stored at p, unless it was printed before.
func (f *Follower) take(p position, rec bson.Raw) error {
	ts, _ := rec.Lookup(f.r.Cfg.TimeKey).TimeOK()
	s := f.seen[p]
	if s == nil {
		s = &printed{ts: ts}
		f.seen[p] = s
	}
	if s.poll != f.polls {
		s.poll, s.copies = f.polls, 0
	}
	if s.copies++; s.copies <= s.printed {
		return nil
	}
	s.printed++
	if ts.After(f.newest) {
		f.newest = ts
	}
	if err := f.emit(rec); err != nil {
		return err
	}
	// A long first poll: the records read are in time order, so those a
	// lag behind the newest are behind every later one.
	if len(f.seen) > max(2*f.pruned, 100000) {
		f.advance()
		f.prune()
	}
	return nil
}

func (f *Follower) pollFlat(ctx context.Context, coll string, q Query) error {
	filter := f.r.entryFilter(q, "")
	if filter == nil {
		filter = bson.D{}
	}
	cur, err := f.r.DB.Collection(coll).Find(ctx, filter, options.Find().SetSort(bson.D{{Key: f.r.Cfg.TimeKey, Value: 1}}))
	if err != nil {
		return fmt.Errorf("querying %s: %w", coll, err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		rec := cur.Current
		if err := f.take(position{doc: bucketRef{coll, string(rec.Lookup(model.ID).Value)}}, rec); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("querying %s: %w", coll, err)
	}
	return nil
}

// pollBuckets reads the entries of the buckets of q whose count changed
// since the last poll (buckets only grow), into counts.
func (f *Follower) pollBuckets(ctx context.Context, coll string, q Query, counts map[bucketRef]int64) error {
	c := f.r.DB.Collection(coll)
	bf := f.r.bucketFilter(q)
	if bf == nil {
		bf = bson.D{}
	}
	cur, err := c.Find(ctx, bf, options.Find().SetProjection(bson.D{{Key: model.ID, Value: 1}, {Key: model.Count, Value: 1}}))
	if err != nil {
		return fmt.Errorf("querying %s: %w", coll, err)
	}
	var changed bson.A
	all := 0
	for cur.Next(ctx) {
		all++
		ref := bucketRef{coll, string(cur.Current.Lookup(model.ID).Value)}
		n, _ := cur.Current.Lookup(model.Count).AsInt64OK()
		if old, ok := f.counts[ref]; !ok || old != n {
			changed = append(changed, cur.Current.Lookup(model.ID))
		}
		counts[ref] = n
	}
	err = cur.Err()
	_ = cur.Close(ctx)
	if err != nil {
		return fmt.Errorf("querying %s: %w", coll, err)
	}
	if len(changed) == 0 {
		return nil
	}
	match := bf
	if len(changed) < all && len(changed) <= 1000 {
		match = append(bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: changed}}}}, bf...)
	}
	return f.r.sortedEntries(ctx, c, match, q, 0, func(d bson.Raw) error {
		rec, ok := d.Lookup(model.Logs).DocumentOK()
		if !ok {
			return nil
		}
		p := position{doc: bucketRef{coll, string(d.Lookup(model.ID).Value)}}
		sum := sha256.Sum256(rec)
		copy(p.entry[:], sum[:])
		return f.take(p, rec)
	})
}

// Follow emits the records of q as they land, polling every interval,
// until ctx ends: first those already stored (from q.From), then each new
// one once, as a Follower with overlap lag does.
func (r *Reader) Follow(ctx context.Context, q Query, every, lag time.Duration, emit func(bson.Raw) error) error {
	f := r.Follower(q, lag, emit)
	for {
		if err := f.Poll(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// followRelist is how many polls apart Span.Follow lists a templated
// output's targets again.
const followRelist = 10

// Follow is Reader.Follow at every target of s, each polled in turn and
// its records emitted with their target. A span of several targets (a
// templated output, or a glob) lists them again every followRelist polls
// and follows the new ones from q.From: a target made while it runs (a
// new namespace) is followed too.
func (s *Span) Follow(ctx context.Context, q Query, every, lag time.Duration, emit func(Place, bson.Raw) error) error {
	followers := map[Place]*Follower{}
	var order []Place
	add := func(rs []*Reader) {
		for _, r := range rs {
			at := r.Place()
			if followers[at] == nil {
				followers[at] = r.Follower(q, lag, func(rec bson.Raw) error { return emit(at, rec) })
				order = append(order, at)
			}
		}
	}
	add(s.Readers)
	for polls := 1; ; polls++ {
		for _, at := range order {
			if err := followers[at].Poll(ctx); err != nil && ctx.Err() == nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
		if s.Named && s.from != nil && polls%followRelist == 0 {
			// A listing that fails leaves the targets known followed; the
			// next one tries again.
			if again, err := s.from.Span(ctx, s.sel); err == nil {
				add(again.Readers)
			}
		}
	}
}

// DefaultLag is how far behind the newest record follow looks for records
// that land late by default: a flush interval ([SERVICE] Flush of a
// classic Fluent Bit configuration file; Fluent Bit's default 1s without
// one, and for YAML, whose service fbconf does not load) and
// flush_timeout, the longest a chunk's first write may take.
func DefaultLag(file string, cfg *conf.Config, env func(string) string) (time.Duration, error) {
	flush := time.Second
	if file != "" {
		secs, err := fbconf.Load(file, env)
		if err != nil {
			return 0, err
		}
		for _, s := range secs {
			v := strings.TrimSpace(s.Props.Get("flush"))
			if s.Kind != "service" || v == "" {
				continue
			}
			sec, err := strconv.ParseFloat(v, 64)
			if err != nil || sec <= 0 || sec > 1e6 {
				return 0, fmt.Errorf("%s: [SERVICE] flush %q: want a number of seconds (or give --lag)", s.Where(), v)
			}
			flush = time.Duration(sec * float64(time.Second))
		}
	}
	return flush + cfg.FlushTimeout, nil
}
