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

// writeFlat inserts one document per record. With id_key, records whose
// field cannot be an _id are parked, and with id_action replace those
// carrying their own id replace the stored document of it.
func (s *Sink) writeFlat(ctx context.Context, f *flush, res *Result) error {
	colls, parts := s.route(f)
	for i, coll := range colls {
		if err := s.prepare(ctx, coll, false); err != nil {
			return err
		}
		inserts, replaces := s.sortFlat(f, f.pending(part(f.batch, parts, i), nil, nil))
		if err := s.putFlat(ctx, f, coll, inserts, false, res); err != nil {
			return err
		}
		if err := s.putFlat(ctx, f, coll, replaces, true, res); err != nil {
			return err
		}
	}
	return nil
}

// sortFlat parks the records whose id_key value cannot be an _id and
// returns the others: those to insert, and with id_action replace those to
// replace the document of their own id with. Of records of one id in the
// chunk, only the last is written to replace, and none when the last is
// parked; the others count as found stored (as a repeat within a chunk
// does with keep): the last stands for them.
func (s *Sink) sortFlat(f *flush, recs []*parser.Record) (inserts, replaces []*parser.Record) {
	if s.opt.IDKey == "" {
		return recs, nil
	}
	inserts = recs[:0:0]
	for _, r := range recs {
		_, own, why := s.idOf(r.Doc)
		switch {
		case why != "":
			f.parked = append(f.parked, writer.Parked{Index: r.Index, Reason: why})
		case own && s.opt.IDReplace:
			replaces = append(replaces, r)
		default:
			inserts = append(inserts, r)
		}
	}
	lastOf := s.lastOfOwn(f)
	last := replaces[:0:0]
	for _, r := range replaces {
		id := r.Doc.Lookup(model.ID)
		if lastOf[string(append([]byte{byte(id.Type)}, id.Data...))] == r.Index {
			last = append(last, r)
		}
	}
	f.storedBefore += len(replaces) - len(last)
	return inserts, last
}

// lastOfOwn is, by own id, the index of the last record of it in the whole
// chunk, parked or not (a record an earlier attempt parked still stands
// for the ones before it): made once per flush, whatever the collections
// its records go to.
func (s *Sink) lastOfOwn(f *flush) map[string]int {
	if f.lastOwn != nil {
		return f.lastOwn
	}
	f.lastOwn = map[string]int{}
	for i := range f.batch.Records {
		r := &f.batch.Records[i]
		if _, own, _ := s.idOf(r.Doc); own {
			id := r.Doc.Lookup(model.ID)
			f.lastOwn[string(append([]byte{byte(id.Type)}, id.Data...))] = r.Index
		}
	}
	return f.lastOwn
}

// putFlat inserts recs into coll, or with replace replaces the documents
// of their ids with them, and accounts for what it did.
func (s *Sink) putFlat(ctx context.Context, f *flush, coll string, recs []*parser.Record, replace bool, res *Result) error {
	if len(recs) == 0 {
		return nil
	}
	docs := make([]writer.Doc, len(recs))
	drops := map[int]int{} // by index in docs
	for j, r := range recs {
		s.expire(r)
		docs[j] = writer.Doc{ID: r.Doc.Lookup(model.ID), Raw: bson.Raw(r.Doc)}
		if d := f.prev.drops[r.Index]; d > 0 {
			drops[j] = d
		}
	}
	limitKey := coll
	if replace {
		limitKey = coll + "\x00replace"
	}
	var ins writer.Inserted
	var err error
	if replace {
		ins, err = writer.ReplaceAll(ctx, s.store, coll, docs, s.retry, f.prev.limits[limitKey], s.buckets.Batch(), drops, s.nextVersion())
	} else {
		ins, err = writer.InsertAll(ctx, s.store, coll, docs, s.retry, f.prev.limits[limitKey], drops)
	}
	if ins.Limit > 0 {
		f.limits[limitKey] = ins.Limit
	}
	for j, d := range ins.Drops {
		f.drops[recs[j].Index] = d
	}
	f.found = f.found || ins.Existed > 0
	f.storedBefore += ins.Existed
	for _, r := range ins.Refused {
		f.parked = append(f.parked, writer.Parked{Index: recs[r.Index].Index, Reason: r.Reason})
	}
	if err != nil {
		return err
	}
	res.Stored += len(docs) - len(ins.Refused) - ins.Existed
	return nil
}

// nextVersion is the version of a replacement's write: the clock in
// nanoseconds, and above every version this process gave before. A
// process started later (a restart) gives larger ones, as the clock has
// moved on: a write of an earlier attempt or process, landing late, finds
// the document at a newer version and applies nothing.
func (s *Sink) nextVersion() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = max(time.Now().UnixNano(), s.version+1)
	return s.version
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
// time part stays, the rest derives from id as flatPrefix does. Documents
// with their own id (id_key) keep it.
func (s *Sink) reid(b *parser.Batch, id string) {
	seed := flatSeed(id)
	for i := range b.Records {
		r := &b.Records[i]
		if _, own, _ := s.idOf(r.Doc); own {
			continue // the record's own id, whatever the generation
		}
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
	id, ierr := r.Doc.LookupErr(model.ID)
	v, err := r.Doc.LookupErr(model.ExpireAt)
	if ierr != nil || err != nil || v.Type != bsoncore.TypeDateTime {
		return
	}
	binary.LittleEndian.PutUint64(v.Data, uint64(s.opt.Expiry.Flat(id, r.Time, r.Doc).UnixMilli()))
}

// splitmix is a bijective 64-bit mix: distinct inputs give distinct ids.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
