package mongolog

import (
	"context"
	"errors"
	"iter"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The read commands across the targets of a Span: each reads every target
// as it reads one, and query merges the records of the targets by time.

// Query calls emit with each record of q and the target it is stored in,
// in time order across the targets (equal times: by target, in the order
// of s.Readers), at most q.Limit. Each target is read as Reader.Query
// reads it, in time order; the streams are merged as they are read.
func (s *Span) Query(ctx context.Context, q Query, emit func(Place, bson.Raw) error) error {
	if len(s.Readers) == 1 {
		r := s.Readers[0]
		at := r.Place()
		return r.Query(ctx, q, func(rec bson.Raw) error { return emit(at, rec) })
	}
	streams := make([]*stream, 0, len(s.Readers))
	defer func() {
		for _, st := range streams {
			st.stop()
		}
	}()
	for _, r := range s.Readers {
		st := &stream{place: r.Place(), timeKey: r.Cfg.TimeKey}
		st.next, st.stop = iter.Pull2(r.records(ctx, q))
		streams = append(streams, st)
		if err := st.advance(); err != nil {
			return err
		}
	}
	for left := q.Limit; ; {
		var first *stream
		for _, st := range streams {
			if st.rec != nil && (first == nil || st.at.Before(first.at)) {
				first = st
			}
		}
		if first == nil {
			return nil
		}
		if err := emit(first.place, first.rec); err != nil {
			return err
		}
		if left--; q.Limit > 0 && left == 0 {
			return nil
		}
		if err := first.advance(); err != nil {
			return err
		}
	}
}

// stream is the records of one target as Query merges them: rec is the
// next one (nil at the end), valid until the next advance.
type stream struct {
	place   Place
	timeKey string
	next    func() (bson.Raw, error, bool)
	stop    func()
	rec     bson.Raw
	at      time.Time
}

func (st *stream) advance() error {
	rec, err, ok := st.next()
	switch {
	case !ok:
		st.rec = nil
		return nil
	case err != nil:
		st.rec = nil
		return err
	}
	st.rec = rec
	st.at, _ = rec.Lookup(st.timeKey).TimeOK()
	return nil
}

// errStopped ends a Reader.Query whose records are no longer wanted.
var errStopped = errors.New("stopped")

// records is Reader.Query as a sequence: each record, valid until the next
// one is asked for, then the error Query ended with, if any.
func (r *Reader) records(ctx context.Context, q Query) iter.Seq2[bson.Raw, error] {
	return func(yield func(bson.Raw, error) bool) {
		err := r.Query(ctx, q, func(rec bson.Raw) error {
			if !yield(rec, nil) {
				return errStopped
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

// UnknownFields is Reader.UnknownFields across the targets.
func (s *Span) UnknownFields(ctx context.Context, q Query) (unknown, seen []string, err error) {
	return unknownFields(ctx, q, func(ctx context.Context, q Query, emit func(bson.Raw) error) error {
		return s.Query(ctx, q, func(_ Place, rec bson.Raw) error { return emit(rec) })
	})
}

// Stats is Reader.Stats across the targets: their buckets summed per step.
func (s *Span) Stats(ctx context.Context, q Query, step time.Duration) ([]*Window, error) {
	step, err := (&Reader{Cfg: s.Cfg}).StatsCheck(q, step)
	if err != nil {
		return nil, err
	}
	byStart := map[int64]*Window{}
	for _, r := range s.Readers {
		if err := r.statsInto(ctx, q, step, byStart); err != nil {
			return nil, err
		}
	}
	return sortedWindows(byStart), nil
}

// Verify is Reader.Verify across the targets: a write applied twice, or a
// value of opt.Unique held twice, is found across them too.
func (s *Span) Verify(ctx context.Context, opt VerifyOptions, report func(Problem)) (Verified, error) {
	vf := newVerifier(opt, report)
	for _, r := range s.Readers {
		if err := r.verifyInto(ctx, vf); err != nil {
			return vf.v, err
		}
	}
	return vf.v, nil
}

// Prune is Reader.Prune across the targets, one after the other, paced to
// opt.Rate documents a second over all of them.
func (s *Span) Prune(ctx context.Context, opt PruneOptions, show func(string)) (Pruned, error) {
	var p Pruned
	if _, err := (&Reader{Cfg: s.Cfg}).PruneFilter(opt); err != nil {
		return p, err
	}
	start := time.Now()
	for _, r := range s.Readers {
		if err := r.pruneInto(ctx, opt, show, start, &p); err != nil {
			return p, err
		}
	}
	return p, nil
}
