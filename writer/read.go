package writer

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Reading buckets: what earlier attempts of a chunk stored (Stored), and
// the bucket a write missed (read).

// Stored finds what earlier attempts of the chunk stored in the buckets of
// groups, wherever in the groups' buckets it is: one read per collection,
// narrowed by the lookup index ({key, start}) to the groups' buckets that
// hold an op element with the chunk's tag, or a record of it parked. It
// returns the indexes (in the chunk) of the records found stored or
// recorded parked; nil without Idempotent.
func (b *Buckets) Stored(ctx context.Context, chunkID string, groups []*bucketer.Group) (map[int]bool, error) {
	l, err := b.stored(ctx, chunkID, groups, nil)
	for i := range l.parked {
		l.stored[i] = true
	}
	return l.stored, err
}

// look is what a look for a chunk's earlier writes found: the records
// stored (by index in the chunk) and where (by groupKey, the positions of
// the runs claimed), and the records recorded parked in a placeholder,
// with the reason (see Buckets.refence).
type look struct {
	stored map[int]bool
	where  map[string]claims
	parked map[int]string
}

// stored is Stored, also returning where it found the records: by groupKey,
// the positions of the runs it claimed. The records of parked (by index in
// the chunk) are not among those found: each was parked after its writes
// were fenced off, so an entry like it belongs to another record of the
// same bytes.
func (b *Buckets) stored(ctx context.Context, chunkID string, groups []*bucketer.Group, parked map[int]bool) (look, error) {
	if !b.cfg.Idempotent || len(groups) == 0 {
		return look{}, nil
	}
	tag := ChunkTag(chunkID)
	byColl := map[string][]*bucketer.Group{}
	var colls []string
	for _, g := range groups {
		c := b.collection(g)
		if byColl[c] == nil {
			colls = append(colls, c)
		}
		byColl[c] = append(byColl[c], g)
	}
	l := look{stored: map[int]bool{}, where: map[string]claims{}}
	for _, coll := range colls {
		gs := byColl[coll]
		var docs []bson.Raw
		err := b.retry.Do(ctx, func() (err error) {
			docs, err = b.store.Find(ctx, coll, storedFilter(gs, tag), Query{Projection: runsProjection})
			return err
		})
		if err != nil {
			return look{}, fmt.Errorf("looking for earlier writes of chunk %s in %s: %w", chunkID, coll, err)
		}
		byID := make(map[string]*bucketer.Group, len(gs))
		for _, g := range gs {
			byID[g.ID] = g
		}
		// The records recorded parked first: none of them has an entry.
		skip, copied := parked, false
		for _, d := range docs {
			id, _ := splitBucketID(d)
			g := byID[id]
			if g == nil {
				continue
			}
			for i, reason := range parkedIn(d, tag, g.Records) {
				if l.parked == nil {
					l.parked = map[int]string{}
				}
				if !copied { // the caller's: copy before adding
					skip, copied = maps.Clone(parked), true
					if skip == nil {
						skip = map[int]bool{}
					}
				}
				l.parked[i], skip[i] = reason, true
			}
		}
		matchers := map[*bucketer.Group]*matcher{}
		for _, d := range docs {
			id, seq := splitBucketID(d)
			g := byID[id]
			if g == nil || seq < 0 {
				continue
			}
			m := matchers[g]
			if m == nil {
				m = newMatcher(g.Records, skip)
				matchers[g] = m
			}
			for _, r := range runs(d) {
				if r.tag != tag {
					continue
				}
				idx := m.claim(r)
				for _, i := range idx {
					l.stored[g.Records[i].Index] = true
				}
				if len(idx) > 0 {
					k := b.groupKey(g)
					if l.where[k] == nil {
						l.where[k] = claims{}
					}
					l.where[k].take(seq, r.at, len(r.entries))
				}
			}
		}
	}
	return l, nil
}

// splitBucketID splits bucket d's _id into its group id and seq; seq is -1
// when the _id ends in no number.
func splitBucketID(d bson.Raw) (group string, seq int) {
	id, _ := d.Lookup(model.ID).StringValueOK()
	cut := max(strings.LastIndexByte(id, '-'), 0)
	seq, err := strconv.Atoi(id[min(cut+1, len(id)):])
	if err != nil {
		seq = -1
	}
	return id[:cut], seq
}

// parkedIn returns the record of recs (a group's, of the chunk of tag)
// that placeholder d records parked, by index, with the reason; nil when
// none. The record must be the one recorded, by its entry's hash: a tag
// shared by chance with another chunk names none of these records.
func parkedIn(d bson.Raw, tag uint32, recs []*parser.Record) map[int]string {
	p, ok := d.Lookup(model.Parked).DocumentOK()
	if !ok {
		return nil
	}
	op, ok1 := p.Lookup(model.ParkedOp).Int32OK()
	i, ok2 := p.Lookup(model.ParkedIndex).Int32OK()
	h, ok3 := p.Lookup(model.ParkedHash).Int64OK()
	if t, _ := opParts(op); !ok1 || !ok2 || !ok3 || t != tag {
		return nil
	}
	for _, r := range recs {
		if r.Index == int(i) && entryHash(r.Doc) == h {
			reason, _ := p.Lookup(model.ParkedReason).StringValueOK()
			return map[int]string{int(i): reason}
		}
	}
	return nil
}

// storedFilter selects the buckets of gs (by key, and start when windowed)
// that hold an op element with tag, or a record parked with it.
func storedFilter(gs []*bucketer.Group, tag uint32) bson.Raw {
	var starts []time.Time
	keys := map[int64]*bsoncore.ArrayBuilder{} // by start, in ms
	for _, g := range gs {
		ms := g.Start.UnixMilli()
		if keys[ms] == nil {
			starts = append(starts, g.Start)
			keys[ms] = bsoncore.NewArrayBuilder()
		}
		keys[ms].AppendDocument(g.Key)
	}
	clause := func(start time.Time) bsoncore.Document {
		c := bsoncore.NewDocumentBuilder().AppendDocument(model.Key,
			bsoncore.NewDocumentBuilder().AppendArray("$in", keys[start.UnixMilli()].Build()).Build())
		if !start.IsZero() {
			c.AppendDateTime(model.Start, start.UnixMilli())
		}
		return c.AppendArray("$or", bsoncore.NewArrayBuilder().
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(model.Ops, tagFilter(tag)).Build()).
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(model.Parked+"."+model.ParkedOp, tagFilter(tag)).Build()).
			Build()).Build()
	}
	f := bsoncore.NewDocumentBuilder()
	if len(starts) == 1 {
		elems, _ := clause(starts[0]).Elements()
		for _, e := range elems {
			f.AppendValue(e.Key(), e.Value())
		}
	} else {
		or := bsoncore.NewArrayBuilder()
		for _, s := range starts {
			or.AppendDocument(clause(s))
		}
		f.AppendArray("$or", or.Build())
	}
	return bson.Raw(f.Build())
}

var (
	fillProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.Seq, 1).AppendInt32(model.Count, 1).
			AppendInt32(model.Bytes, 1).AppendInt32(model.Ops, 1).AppendInt32(model.Values, 1).AppendInt32(model.Sealed, 1).Build())
	entriesProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.Seq, 1).AppendInt32(model.Count, 1).
				AppendInt32(model.Bytes, 1).AppendInt32(model.Ops, 1).AppendInt32(model.Values, 1).AppendInt32(model.Sealed, 1).
				AppendInt32(model.Logs, 1).Build())
	runsProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.Ops, 1).AppendInt32(model.Logs, 1).
			AppendInt32(model.Parked, 1).Build())
	parkedProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.Parked, 1).Build())
	bySeqDesc        = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.Seq, -1).Build())
)

func idFilter(id string) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString(model.ID, id).Build())
}

// groupFilter selects the buckets of g through the lookup index.
func (b *Buckets) groupFilter(g *bucketer.Group) bson.Raw {
	f := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, g.Key)
	if !g.Start.IsZero() {
		f.AppendDateTime(model.Start, g.Start.UnixMilli())
	}
	return bson.Raw(f.Build())
}

// heldValues reads the keep_values values of a bucket.
func heldValues(d bson.Raw) map[string]map[string]bool {
	vd, ok := d.Lookup(model.Values).DocumentOK()
	fields, err := vd.Elements()
	if !ok || err != nil || len(fields) == 0 {
		return nil
	}
	out := map[string]map[string]bool{}
	for _, f := range fields {
		arr, _ := f.Value().ArrayOK()
		vals, _ := arr.Values()
		m := map[string]bool{}
		for _, v := range vals {
			m[valueKey(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})] = true
		}
		out[f.Key()] = m
	}
	return out
}

func fill(d bson.Raw) (count, bytes int) {
	return int(numberOf(d.Lookup(model.Count))), int(numberOf(d.Lookup(model.Bytes)))
}

func numberOf(v bson.RawValue) int64 {
	if i, ok := v.AsInt64OK(); ok {
		return i
	}
	return 0
}

// read reads the bucket the write of w.p missed, as a asks. When the bucket
// holds a write of this chunk at p.count, an earlier attempt of p (whose
// outcome was unknown) was applied: read compares the entries and says how
// many of w.recs, in order, it stored. A read of the group's newest bucket
// looks at p's own bucket first: the write may have applied there with its
// reply lost, and the newest bucket may be a later one (another writer's).
// A bucket holding a write of this chunk at any other position no write
// of this attempt took, nor the lookup found, holds an earlier attempt's
// write that applied after the lookup (foreign): only at the next bucket
// of the group can one still apply then, and the group is fenced and
// looked at again.
func (b *Buckets) read(ctx context.Context, w *groupWrite, a action) (bucketRead, error) {
	g, p := w.g, w.p
	id := bucketer.BucketID(g.ID, p.seq)
	q := Query{Projection: fillProjection}
	if a.entries {
		q.Projection = entriesProjection
	}
	doc, err := b.findOne(ctx, g, idFilter(id), q)
	if err != nil {
		return bucketRead{}, fmt.Errorf("reading bucket %s: %w", id, err)
	}
	r := bucketRead{seq: p.seq}
	if b.mayHold(doc, w) {
		if _, ok := doc.Lookup(model.Logs).ArrayOK(); !ok {
			if doc, err = b.findOne(ctx, g, idFilter(id), Query{Projection: entriesProjection}); err != nil || doc == nil {
				r.gone, r.err = true, err
				return r, err
			}
		}
		r.applied = appliedAt(doc, p.count, w.tag, w.recs, func(at int) bool { return w.claims.taken(p.seq, at) })
	}
	r.foreign = b.foreign(doc, w, p.seq, r.applied > 0)
	if a.newest && r.applied == 0 && !r.foreign {
		doc, err = b.findOne(ctx, g, b.groupFilter(g), Query{Projection: fillProjection, Sort: bySeqDesc, Limit: 1})
		if err != nil {
			return bucketRead{}, fmt.Errorf("reading the newest bucket of %s: %w", g.ID, err)
		}
		if s, ok := doc.Lookup(model.Seq).AsInt64OK(); ok {
			r.seq = int(s)
		}
		r.foreign = b.foreign(doc, w, r.seq, false)
	}
	if doc == nil {
		return bucketRead{foreign: r.foreign}, nil
	}
	r.found, r.values = true, heldValues(doc)
	r.sealed = model.IsSealed(doc)
	r.count, r.bytes = fill(doc)
	return r, nil
}

// mayHold reports whether bucket doc may hold the write of w.p: a write of
// w's chunk begins at p.count, and no write of this attempt took that
// position, nor did an earlier attempt's the lookup found.
func (b *Buckets) mayHold(doc bson.Raw, w *groupWrite) bool {
	return doc != nil && b.cfg.Idempotent && !w.claims.taken(w.p.seq, w.p.count) && tagAt(doc, w.p.count, w.tag)
}

// foreign reports whether bucket doc (sequence seq) holds a write of w's
// chunk at a position that is not accounted for: not taken by a write of
// this attempt, not found by the lookup, and, with own, not the position of
// w's own write in doubt (found there, its entries compared).
func (b *Buckets) foreign(doc bson.Raw, w *groupWrite, seq int, own bool) bool {
	if doc == nil || !b.cfg.Idempotent {
		return false
	}
	found := false
	opElems(doc, func(pos int, t uint32, _ int) bool {
		mine := own && seq == w.p.seq && pos == w.p.count
		found = t == w.tag && !mine && !w.claims.taken(seq, pos)
		return !found
	})
	return found
}

// findOne returns the first document of g's collection matching filter, or
// nil.
func (b *Buckets) findOne(ctx context.Context, g *bucketer.Group, filter bson.Raw, q Query) (bson.Raw, error) {
	var docs []bson.Raw
	err := b.retry.Do(ctx, func() (err error) {
		docs, err = b.store.Find(ctx, b.collection(g), filter, q)
		return err
	})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}
