package layout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// ttlIndex is what a collection has of a TTL index on one field.
type ttlIndex struct {
	found   bool
	name    string // as listIndexes gives it
	after   *int64 // expireAfterSeconds; nil: a plain index
	missing bool   // the collection does not exist
}

// TTLAction is what start-up does about a collection's TTL index.
type TTLAction int

const (
	TTLKeep   TTLAction = iota // the index has the TTL already
	TTLCreate                  // no index on the field: create one
	TTLChange                  // an index with another TTL, or none: collMod
)

// PlanTTL says what to do about an index (found, with TTL after seconds or
// none) for a TTL of want seconds, and whether the change expires
// documents earlier than before (lowering, or a TTL where there was none).
func PlanTTL(found bool, after *int64, want int64) (action TTLAction, lowers bool) {
	switch {
	case !found:
		return TTLCreate, true
	case after != nil && *after == want:
		return TTLKeep, false
	default:
		return TTLChange, after == nil || want < *after
	}
}

// ensureTTL gives coll a TTL index on s.TTLField with expireAfterSeconds
// s.TTL. A change that expires documents earlier than before runs in the
// background, writes going on meanwhile: it counts what would expire at
// once and, above the burst limit, deletes those documents first at the
// keeper's rate; then it changes the index. Documents without the field
// are given it in the background (when s.ExpireAt says how). A server that
// refuses TTL indexes or collMod gets one warning per collection.
//
// A collection whose TTL ApplyTTL applied (a start's pass over the
// existing collections) is left as it is.
func (k *Keeper) ensureTTL(ctx context.Context, coll string, s Spec) error {
	return k.onceTTL(coll, func(by string) (string, error) {
		if by == ttlAtStart {
			return by, nil
		}
		idx, err := k.ttlIndex(ctx, coll, s.TTLField)
		if err != nil {
			return by, fmt.Errorf("listing the indexes of %s: %w", coll, err)
		}
		if err := k.applyTTL(ctx, coll, s, idx); err != nil {
			return by, err
		}
		return ttlAtWrite, nil
	})
}

// Who applied the TTL of a collection (see onceTTL).
const (
	ttlAtStart = "start" // ApplyTTL
	ttlAtWrite = "write" // Prepare
)

// onceTTL runs apply for coll, one call per collection at a time, giving
// it who applied the collection's TTL before ("" for none) and noting
// who it says applied it: ApplyTTL and the first write's Prepare, which
// may run at once, apply a collection's TTL once between them.
func (k *Keeper) onceTTL(coll string, apply func(by string) (string, error)) error {
	k.mu.Lock()
	mu := k.ttlMu[coll]
	if mu == nil {
		mu = &sync.Mutex{}
		k.ttlMu[coll] = mu
	}
	k.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	k.mu.Lock()
	by := k.ttlBy[coll]
	k.mu.Unlock()
	by, err := apply(by)
	k.mu.Lock()
	k.ttlBy[coll] = by
	k.mu.Unlock()
	return err
}

// applyTTL is ensureTTL for a collection whose index on s.TTLField is idx.
func (k *Keeper) applyTTL(ctx context.Context, coll string, s Spec, idx ttlIndex) error {
	want := int64(s.TTL / time.Second)
	action, lowers := PlanTTL(idx.found, idx.after, want)
	if action == TTLCreate && k.empty(ctx, coll, idx) {
		// Nothing to expire at once: the index is made before the first
		// write instead of in the background.
		lowers = false
	}
	apply := func(ctx context.Context) error {
		switch action {
		case TTLCreate:
			return k.createTTL(ctx, coll, s.TTLField, want)
		case TTLChange:
			return k.collMod(ctx, coll, s.TTLField, idx.after, want)
		}
		return nil
	}
	if action != TTLKeep && lowers {
		// Counting what expires at once reads the collection: in the
		// background, so that a large one never holds up writes.
		k.background(coll, "ttl", func(ctx context.Context) {
			n, err := k.db.Collection(coll).CountDocuments(ctx, ExpiredBy(s.TTLField, time.Duration(want)*time.Second, time.Now()))
			if err != nil {
				if ctx.Err() == nil {
					k.log.Warnf("counting the documents of %s a TTL of %ds expires: %v (the index keeps its TTL until the next start)", coll, want, err)
				}
				return
			}
			if n > 0 {
				k.log.Infof("ttl %ds on %s expires %d documents at once", want, coll, n)
			}
			if n > k.limits.BurstLimit && !k.deleteExpired(ctx, coll, s.TTLField, want, n) {
				return
			}
			k.settle(coll, apply(ctx))
		})
		return k.backfill(coll, s)
	}
	k.settle(coll, apply(ctx))
	return k.backfill(coll, s)
}

// ApplyTTL gives coll, when it exists, the TTL index of s (see
// ensureTTL), as a start applies the configuration to the collections
// written before: a changed ttl takes effect without waiting for a write.
// A collection that does not exist is left for its first write to create.
func (k *Keeper) ApplyTTL(ctx context.Context, coll string, s Spec) error {
	if s.TTLField == "" || s.TTL <= 0 {
		return nil
	}
	return k.onceTTL(coll, func(by string) (string, error) {
		if by != "" {
			return by, nil
		}
		idx, err := k.ttlIndex(ctx, coll, s.TTLField)
		switch {
		case err != nil:
			return by, fmt.Errorf("listing the indexes of %s: %w", coll, err)
		case idx.missing:
			return by, nil
		}
		if err := k.applyTTL(ctx, coll, s, idx); err != nil {
			return by, err
		}
		return ttlAtStart, nil
	})
}

// settle logs the outcome of a TTL index change.
func (k *Keeper) settle(coll string, err error) {
	if err == nil {
		return
	}
	if errkind.Of(err).Refusal() {
		k.warnOnce("ttl\x00"+coll, "%v (documents of %s do not expire by this ttl; writing goes on)", err, coll)
		return
	}
	k.log.Warnf("%v (tried again at the next start)", err)
}

// ExpiredBy is the filter of the documents that a TTL index on field with
// an expireAfterSeconds of ttl has expired at now: those whose field holds
// a date before now minus ttl. A date compares only with dates, so a
// document whose field is a number or a string, or that has no field,
// never matches (a TTL index never deletes those either). The plugin
// counts and deletes by it before lowering a TTL; mongolog doctor counts
// by it what a change would expire at once and the backlog.
func ExpiredBy(field string, ttl time.Duration, now time.Time) bson.D {
	return bson.D{{Key: field, Value: bson.D{{Key: "$lt", Value: now.Add(-ttl)}}}}
}

// empty reports whether coll is known to hold no document.
func (k *Keeper) empty(ctx context.Context, coll string, idx ttlIndex) bool {
	if idx.missing {
		return true
	}
	err := k.db.Collection(coll).FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: model.ID, Value: 1}})).Err()
	return errors.Is(err, mongo.ErrNoDocuments)
}

// ttlIndex finds the index of coll on field alone.
func (k *Keeper) ttlIndex(ctx context.Context, coll, field string) (ttlIndex, error) {
	cur, err := k.db.Collection(coll).Indexes().List(ctx)
	if errkind.NamespaceNotFound(err) {
		return ttlIndex{missing: true}, nil
	}
	if err != nil {
		return ttlIndex{}, err
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		keys, ok := cur.Current.Lookup("key").DocumentOK()
		if !ok {
			continue
		}
		elems, _ := keys.Elements()
		if len(elems) != 1 || elems[0].Key() != field {
			continue
		}
		idx := ttlIndex{found: true}
		idx.name, _ = cur.Current.Lookup("name").StringValueOK()
		if v, ok := cur.Current.Lookup("expireAfterSeconds").AsInt64OK(); ok {
			idx.after = &v
		} else if f, ok := cur.Current.Lookup("expireAfterSeconds").DoubleOK(); ok {
			v := int64(f)
			idx.after = &v
		}
		return idx, nil
	}
	return ttlIndex{}, cur.Err()
}

func (k *Keeper) createTTL(ctx context.Context, coll, field string, after int64) error {
	m := mongo.IndexModel{Keys: bson.D{{Key: field, Value: 1}}, Options: options.Index().SetExpireAfterSeconds(int32(after))}
	if _, err := k.db.Collection(coll).Indexes().CreateOne(ctx, m); err != nil {
		return fmt.Errorf("creating TTL index {%s: 1} (expireAfterSeconds %d) on %s: %w", field, after, coll, err)
	}
	k.log.Infof("created TTL index {%s: 1} on %s: documents expire %ds after %s", field, coll, after, field)
	return nil
}

// collMod changes the TTL of the index on field in place: never dropped and
// rebuilt. A plain index becomes a TTL index this way (MongoDB 6.0+). The
// index is named by its key pattern; a server that refuses that form
// (some MongoDB-compatible servers take only a name) is asked again by the
// index's name, as listIndexes gives it.
func (k *Keeper) collMod(ctx context.Context, coll, field string, from *int64, after int64) error {
	keys := bson.D{{Key: field, Value: 1}}
	was := "none"
	if from != nil {
		was = fmt.Sprintf("%ds", *from)
	}
	failed := func(err error) error {
		return fmt.Errorf("changing the TTL of index {%s: 1} on %s from %s to %ds (collMod): %w", field, coll, was, after, err)
	}
	how := ""
	err := k.runner.Run(ctx, collModCmd(coll, bson.E{Key: "keyPattern", Value: keys}, after))
	if errkind.Of(err).Refusal() {
		idx, lerr := k.ttlIndex(ctx, coll, field)
		switch {
		case lerr != nil:
			return failed(fmt.Errorf("%v; listing the indexes for its name: %w", err, lerr))
		case idx.name == "":
			return failed(err)
		}
		k.log.Debugf("collMod of index {%s: 1} on %s by key pattern refused (%v): asking by its name %s", field, coll, err, idx.name)
		if nerr := k.runner.Run(ctx, collModCmd(coll, bson.E{Key: "name", Value: idx.name}, after)); nerr != nil {
			return failed(fmt.Errorf("by key pattern: %v; by name %s: %w", err, idx.name, nerr))
		}
		err, how = nil, " (by its name "+idx.name+": the server refused the key pattern)"
	}
	if err != nil {
		return failed(err)
	}
	k.log.Infof("changed the TTL of index {%s: 1} on %s from %s to %ds%s", field, coll, was, after, how)
	return nil
}

// collModCmd is the collMod giving the index of coll that which names an
// expireAfterSeconds of after.
func collModCmd(coll string, which bson.E, after int64) bson.D {
	return bson.D{{Key: "collMod", Value: coll}, {Key: "index", Value: bson.D{which, {Key: "expireAfterSeconds", Value: after}}}}
}

// pace waits so that done documents since start took at least the time
// the keeper's rate allows; false when ctx ends first.
func (k *Keeper) pace(ctx context.Context, start time.Time, done int64) bool {
	due := start.Add(time.Duration(float64(done) / float64(k.limits.Rate) * float64(time.Second)))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(due)):
		return true
	}
}

// deleteExpired deletes, oldest first and at the keeper's rate, the
// documents of coll that a TTL of want seconds expires, before the TTL
// index is lowered: the TTL monitor would delete them in one burst. It
// reports whether it finished.
func (k *Keeper) deleteExpired(ctx context.Context, coll, field string, want, total int64) bool {
	c := k.db.Collection(coll)
	batch := int64(min(k.limits.Rate, 1000))
	k.log.Infof("ttl %ds on %s: deleting %d documents at %d/s before lowering the index (ttl_burst_limit %d)",
		want, coll, total, k.limits.Rate, k.limits.BurstLimit)
	start, last := time.Now(), time.Now()
	var done int64
	for {
		filter := ExpiredBy(field, time.Duration(want)*time.Second, time.Now())
		cur, err := c.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: model.ID, Value: 1}}).
			SetSort(bson.D{{Key: field, Value: 1}}).SetLimit(batch))
		var ids bson.A
		if err == nil {
			for cur.Next(ctx) {
				ids = append(ids, cur.Current.Lookup(model.ID))
			}
			err = errors.Join(cur.Err(), cur.Close(ctx))
		}
		if err == nil && len(ids) > 0 {
			var res *mongo.DeleteResult
			res, err = c.DeleteMany(ctx, bson.D{{Key: model.ID, Value: bson.D{{Key: "$in", Value: ids}}}})
			if err == nil {
				done += res.DeletedCount
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				k.log.Warnf("ttl %ds on %s: deleting expired documents stopped after %d: %v (the index keeps its TTL until the next start)", want, coll, done, err)
			}
			return false
		}
		if len(ids) == 0 {
			k.log.Infof("ttl %ds on %s: deleted %d documents", want, coll, done)
			return true
		}
		if time.Since(last) >= 10*time.Second {
			k.log.Infof("ttl %ds on %s: deleted %d of %d documents", want, coll, done, total)
			last = time.Now()
		}
		if !k.pace(ctx, start, done) {
			return false
		}
	}
}

// backfill gives the documents of coll without s.TTLField one, in the
// background at the keeper's rate. Several agents doing it at once are
// harmless: each update applies only to a document still without it.
func (k *Keeper) backfill(coll string, s Spec) error {
	if s.ExpireAt == nil {
		return nil
	}
	k.background(coll, "expireAt backfill", func(ctx context.Context) {
		c := k.db.Collection(coll)
		missing := bson.D{{Key: s.TTLField, Value: bson.D{{Key: "$exists", Value: false}}}}
		batch := int64(min(k.limits.Rate, 1000))
		start, last := time.Now(), time.Now()
		var done, skipped int64
		fail := func(err error) {
			if ctx.Err() == nil {
				k.log.Warnf("giving documents of %s an %s stopped after %d: %v (resumed at the next start)", coll, s.TTLField, done, err)
			}
		}
		for {
			find := options.Find().SetLimit(batch).SetSkip(skipped)
			if s.Projection != nil {
				find.SetProjection(s.Projection)
			}
			cur, err := c.Find(ctx, missing, find)
			if err != nil {
				fail(err)
				return
			}
			var models []mongo.WriteModel
			n := 0
			for cur.Next(ctx) {
				n++
				at, ok := s.ExpireAt(cur.Current)
				if !ok {
					skipped++ // no time to anchor on: it stays without
					continue
				}
				models = append(models, mongo.NewUpdateOneModel().
					SetFilter(bson.D{{Key: model.ID, Value: cur.Current.Lookup(model.ID)}, missing[0]}).
					SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: s.TTLField, Value: at}}}}))
			}
			if err := errors.Join(cur.Err(), cur.Close(ctx)); err != nil {
				fail(err)
				return
			}
			if n == 0 {
				if done > 0 {
					k.log.Infof("gave %d documents of %s an %s", done, coll, s.TTLField)
				}
				return
			}
			if done == 0 && len(models) > 0 {
				k.log.Infof("giving the documents of %s without %s one, %d/s", coll, s.TTLField, k.limits.Rate)
			}
			for len(models) > 0 {
				m := models[:min(len(models), k.limits.Batch)]
				models = models[len(m):]
				res, err := c.BulkWrite(ctx, m, options.BulkWrite().SetOrdered(false))
				if err != nil {
					fail(err)
					return
				}
				done += res.ModifiedCount
			}
			if time.Since(last) >= 10*time.Second {
				k.log.Infof("gave %d documents of %s an %s so far", done, coll, s.TTLField)
				last = time.Now()
			}
			if !k.pace(ctx, start, done+skipped) {
				return
			}
		}
	})
	return nil
}
