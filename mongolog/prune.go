package mongolog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// PruneOptions say what prune deletes and how fast.
type PruneOptions struct {
	Conds  []Cond    // bucket_key fields (bucket mode) or top-level fields (flat)
	Before time.Time // documents wholly older than this go
	Rate   int       // documents per second
	DryRun bool      // count and show, delete nothing
}

// Pruned is what prune deleted (or, dry, would delete).
type Pruned struct {
	Docs, Records int64
}

// pruneTimeField is the field prune compares with the age: a bucket's
// newest record, or a flat record's time.
func (r *Reader) pruneTimeField() string {
	if r.Cfg.Mode == model.ModeFlat {
		return r.Cfg.TimeKey
	}
	return model.MaxTs
}

// PruneFilter checks opt and returns the filter of the documents it
// deletes; it needs the configuration alone, so a bad condition is
// refused before anything is read.
func (r *Reader) PruneFilter(opt PruneOptions) (bson.D, error) {
	if opt.Before.IsZero() {
		return nil, fmt.Errorf("prune needs an age: nothing is deleted without one")
	}
	filter := bson.D{}
	for _, c := range opt.Conds {
		if r.Cfg.Mode == model.ModeFlat {
			filter = append(filter, c.filter(c.Field))
			continue
		}
		if !r.keyField(c.Field) {
			return nil, fmt.Errorf("condition %s: prune deletes whole buckets, so it takes bucket_key fields only (%s), and %s is not one",
				c, strings.Join(r.keys(), ","), c.Field)
		}
		filter = append(filter, r.keyCond(c, c.Field))
	}
	return mergeSame(append(filter, bson.E{Key: r.pruneTimeField(), Value: bson.D{{Key: "$lt", Value: opt.Before}}})), nil
}

// Prune deletes the buckets (flat documents) of the key conditions whose
// records all lie before opt.Before, across partitions, oldest first in
// batches paced to opt.Rate documents per second. Per-key retention for
// data already written; progress and, dry, each document that would go,
// are reported through show.
func (r *Reader) Prune(ctx context.Context, opt PruneOptions, show func(string)) (Pruned, error) {
	var p Pruned
	err := r.pruneInto(ctx, opt, show, time.Now(), &p)
	return p, err
}

// pruneInto prunes r's target as Prune does, adding to p what goes: the
// pace counts from start and p's documents, which a Span shares across
// its targets.
func (r *Reader) pruneInto(ctx context.Context, opt PruneOptions, show func(string), start time.Time, p *Pruned) error {
	rate := max(opt.Rate, 1)
	filter, err := r.PruneFilter(opt)
	if err != nil {
		return err
	}
	timeField := r.pruneTimeField()
	colls, err := r.Collections(ctx, time.Time{}, opt.Before)
	if err != nil {
		return err
	}
	batch := int64(min(rate, 1000))
	for _, coll := range colls {
		c := r.DB.Collection(coll)
		var skip int64 // dry: what was shown already
		for {
			fo := options.Find().SetSort(bson.D{{Key: timeField, Value: 1}}).SetLimit(batch).
				SetProjection(bson.D{{Key: model.ID, Value: 1}, {Key: model.Count, Value: 1}, {Key: timeField, Value: 1}, {Key: model.Key, Value: 1}})
			if opt.DryRun {
				fo.SetSkip(skip)
			}
			cur, err := c.Find(ctx, filter, fo)
			if err != nil {
				return fmt.Errorf("reading %s: %w", r.Label(coll), err)
			}
			var ids bson.A
			var records int64
			for cur.Next(ctx) {
				d := cur.Current
				ids = append(ids, d.Lookup(model.ID))
				n := int64(1)
				if r.Cfg.Mode != model.ModeFlat {
					n = d.Lookup(model.Count).AsInt64()
				}
				records += n
				if opt.DryRun {
					key := ""
					if k, ok := d.Lookup(model.Key).DocumentOK(); ok {
						key = " key " + k.String()
					}
					show(fmt.Sprintf("would delete %s %s%s, %d records, newest %s", r.Label(coll), cell(d.Lookup(model.ID)), key, n,
						cell(d.Lookup(timeField))))
				}
			}
			if err := cur.Err(); err != nil {
				_ = cur.Close(ctx)
				return err
			}
			_ = cur.Close(ctx)
			if len(ids) == 0 {
				break
			}
			if opt.DryRun {
				skip += int64(len(ids))
				p.Docs += int64(len(ids))
				p.Records += records
				continue
			}
			res, err := c.DeleteMany(ctx, bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: ids}}}})
			if err != nil {
				return fmt.Errorf("deleting from %s: %w", r.Label(coll), err)
			}
			p.Docs += res.DeletedCount
			p.Records += records
			show(fmt.Sprintf("deleted %d documents (%d records) so far", p.Docs, p.Records))
			if err := pace(ctx, start, p.Docs, rate); err != nil {
				return err
			}
		}
	}
	return nil
}

// pace waits until done documents since start have taken the time rate
// documents a second allow; an error when ctx ends first.
func pace(ctx context.Context, start time.Time, done int64, rate int) error {
	due := start.Add(time.Duration(float64(done) / float64(max(rate, 1)) * float64(time.Second)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(due)):
		return nil
	}
}
