package sink

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// limited is a Store that has at most cap(slots) write commands in flight.
type limited struct {
	writer.Store
	slots   chan struct{}
	onWrite func(delta int)
}

func (l *limited) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		if l.onWrite != nil {
			l.onWrite(1)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limited) release() {
	if l.onWrite != nil {
		l.onWrite(-1)
	}
	<-l.slots
}

func (l *limited) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	if err := l.acquire(ctx); err != nil {
		return slices.Repeat([]error{err}, len(ups))
	}
	defer l.release()
	return l.Store.Upserts(ctx, coll, ups)
}

func (l *limited) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	return l.Store.InsertMany(ctx, coll, docs)
}

func (l *limited) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	return l.Store.Replace(ctx, coll, docs)
}

func (l *limited) UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	return l.Store.UpdateMany(ctx, coll, filter, update)
}
