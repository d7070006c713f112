package sink

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// writeFlat inserts one document per record.
func (s *Sink) writeFlat(ctx context.Context, f *flush, res *Result) error {
	colls, parts := s.route(f)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll, false); err != nil {
			return err
		}
		recs := f.pending(part(f.batch, parts, i), nil)
		docs := make([]writer.Doc, len(recs))
		for j, r := range recs {
			s.expire(r)
			docs[j] = writer.Doc{ID: r.Doc.Lookup(model.ID), Raw: bson.Raw(r.Doc)}
		}
		drops := map[int]int{} // by index in docs
		for j, r := range recs {
			if d := f.prev.drops[r.Index]; d > 0 {
				drops[j] = d
			}
		}
		ins, err := writer.InsertAll(ctx, s.store, coll, docs, s.retry, f.prev.limits[coll], drops)
		refused := ins.Refused
		if ins.Limit > 0 {
			f.limits[coll] = ins.Limit
		}
		for j, d := range ins.Drops {
			f.drops[recs[j].Index] = d
		}
		f.found = f.found || ins.Existed > 0
		f.storedBefore += ins.Existed
		for _, r := range refused {
			f.parked = append(f.parked, writer.Parked{Index: recs[r.Index].Index, Reason: r.Reason})
		}
		if err != nil {
			return err
		}
		res.Stored += len(docs) - len(refused) - ins.Existed
	}
	return nil
}

// flatPrefix gives each flat document a deterministic ObjectID (the record's
// time in seconds, then 8 bytes derived from the chunk id and the record
// index) and the tag.
func (s *Sink) flatPrefix(id, tag string) parser.Prefix {
	seed := flatSeed(id)
	return func(dst []byte, idx int, t time.Time) []byte {
		var oid [12]byte
		binary.BigEndian.PutUint32(oid[:4], uint32(t.Unix()))
		binary.BigEndian.PutUint64(oid[4:], splitmix(seed+uint64(idx)))
		dst = bsoncore.AppendObjectIDElement(dst, model.ID, oid)
		dst = bsoncore.AppendStringElement(dst, s.opt.TagKey, tag)
		if s.opt.Expiry.On() {
			// Filled in by expire once the record's fields and time are known.
			dst = bsoncore.AppendTimeElement(dst, model.ExpireAt, time.Time{})
		}
		return dst
	}
}

// flatSeed is what the ids of a flat chunk's documents derive from.
func flatSeed(id string) uint64 {
	raw, _ := hex.DecodeString(id[:16])
	return binary.BigEndian.Uint64(raw)
}

// reid gives the flat documents of b the ids of chunk id, in place: their
// time part stays, the rest derives from id as flatPrefix does.
func (s *Sink) reid(b *parser.Batch, id string) {
	seed := flatSeed(id)
	for i := range b.Records {
		r := &b.Records[i]
		if v, err := r.Doc.LookupErr(model.ID); err == nil && v.Type == bsoncore.TypeObjectID {
			binary.BigEndian.PutUint64(v.Data[4:], splitmix(seed+uint64(r.Index)))
		}
	}
}

// expire fills in the expireAt of a flat document, which depends on its
// fields (ttl_rules) and its time (which the line may have set).
func (s *Sink) expire(r *parser.Record) {
	if !s.opt.Expiry.On() {
		return
	}
	oid, ok := r.Doc.Lookup(model.ID).ObjectIDOK()
	v, err := r.Doc.LookupErr(model.ExpireAt)
	if !ok || err != nil || v.Type != bsoncore.TypeDateTime {
		return
	}
	binary.LittleEndian.PutUint64(v.Data, uint64(s.opt.Expiry.Flat(oid, r.Time, r.Doc).UnixMilli()))
}

// splitmix is a bijective 64-bit mix: distinct inputs give distinct ids.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
