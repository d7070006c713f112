package writer

import (
	"hash/fnv"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// The statements of bucket writes: the filter naming the bucket in the
// state a write assumes, and the update applying the write.

// headerReserve is the most a bucket's fixed fields take (_id, window
// bounds, counters, array headers), beside its key and statistics.
const headerReserve = 512

// encode builds the statement of the write planned.
func (w *groupWrite) encode() {
	b, st := w.b, w.st
	batch := w.recs[:w.p.n]
	sum := b.grouper.Summarize(batch)
	w.adds = sum.Bytes + w.p.n*w.size.extra + st.capValues(&sum)
	w.vals = sum.Values
	if b.cfg.Idempotent {
		w.adds += opsBytes(w.p.n)
	}
	w.putBuffer()
	w.buf = b.buffers.Get().(*[]byte)
	// Only a bucket's first write inserts it: a later one that finds no
	// bucket (its state a wrong hint, or the bucket expired) must not
	// insert one counting entries it does not hold.
	w.stmt = Upsert{Filter: b.filter(w.g, w.p), Update: b.update((*w.buf)[:0], w.g, w.p, batch, sum, w.adds, w.tag), Insert: w.p.count == 0}
}

func (w *groupWrite) putBuffer() {
	if w.buf != nil {
		*w.buf = w.stmt.Update[:0]
		w.b.buffers.Put(w.buf)
		w.buf, w.stmt = nil, Upsert{}
	}
}

// header is the bytes a bucket of g takes beside its entries and ops.
func (b *Buckets) header(g *bucketer.Group) int {
	h := headerReserve + len(g.Key)
	for _, f := range b.grouper.Stats {
		h += 3*(len(f)+16) + 16
	}
	for _, f := range b.grouper.CountBy {
		h += len(f) + 8
	}
	return h
}

// filter is the update filter of part p: the bucket, in the state p
// assumes, open. It also names the bucket's key fields and window start, which
// the _id implies: a collection sharded on them (or on a hashed _id) routes
// the upsert to one shard, as MongoDB requires of upserts.
func (b *Buckets) filter(g *bucketer.Group, p *part) bson.Raw {
	f := b.bucketFilter(g, p.seq)
	f.AppendInt32(model.Count, int32(p.count))
	return bson.Raw(f.AppendDocument(model.Sealed, openFilter).Build())
}

// placeholder is the statement sealing bucket seq of g, inserting it
// empty when there is none, with sealed 1: closed to writes, open to the
// record of one record parked (parkedIn). A bucket sealed already
// (true) is left as it is: the statement collides on its _id.
func (b *Buckets) placeholder(g *bucketer.Group, seq int) Upsert {
	f := b.bucketFilter(g, seq)
	ins := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, g.Key)
	if !g.Start.IsZero() {
		ins.AppendDateTime(model.Start, g.Start.UnixMilli()).AppendDateTime(model.End, g.End.UnixMilli())
	}
	ins.AppendInt32(model.Seq, int32(seq)).AppendInt32(model.Count, 0).AppendInt64(model.Bytes, 0)
	update := bsoncore.NewDocumentBuilder().AppendDocument("$setOnInsert", ins.Build()).
		AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendInt32(model.Sealed, 1).Build()).Build()
	filter := f.AppendDocument(model.Sealed, unsealedFilter).Build()
	return Upsert{Filter: bson.Raw(filter), Update: bson.Raw(update), Insert: true}
}

// parkedIn is the statement recording, in placeholder seq of g, that
// record r of the chunk of tag is parked for reason, and sealing it for
// good: it applies once, and only while no fence sealed it.
func (b *Buckets) parkedIn(g *bucketer.Group, seq int, tag uint32, r *parser.Record, reason string) Upsert {
	filter := b.bucketFilter(g, seq).AppendInt32(model.Sealed, 1).Build()
	rec := bsoncore.NewDocumentBuilder().AppendInt32(model.ParkedOp, opValue(tag, 1)).
		AppendInt32(model.ParkedIndex, int32(r.Index)).AppendInt64(model.ParkedHash, entryHash(r.Doc)).
		AppendString(model.ParkedReason, reason).Build()
	update := bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendBoolean(model.Sealed, true).AppendDocument(model.Parked, rec).Build()).Build()
	return Upsert{Filter: bson.Raw(filter), Update: bson.Raw(update)}
}

// entryHash is the hash a record of a park names its entry by.
func entryHash(doc []byte) int64 {
	h := fnv.New64a()
	h.Write(doc)
	return int64(h.Sum64())
}

// bucketFilter starts a filter naming bucket seq of g: its _id, key
// fields and window start.
func (b *Buckets) bucketFilter(g *bucketer.Group, seq int) *bsoncore.DocumentBuilder {
	f := bsoncore.NewDocumentBuilder().AppendString(model.ID, bucketer.BucketID(g.ID, seq))
	b.grouper.KeyFields(g.Key, func(path string, v bsoncore.Value) {
		f.AppendValue(model.Key+"."+path, v)
	})
	if !g.Start.IsZero() {
		f.AppendDateTime(model.Start, g.Start.UnixMilli())
	}
	return f
}

// update builds the update document of one write into dst.
func (b *Buckets) update(dst []byte, g *bucketer.Group, p *part, recs []*parser.Record, sum bucketer.Summary, size int, tag uint32) bson.Raw {
	at, dst := bsoncore.ReserveLength(dst)

	ins, dst := bsoncore.AppendDocumentElementStart(dst, "$setOnInsert")
	dst = bsoncore.AppendDocumentElement(dst, model.Key, g.Key)
	if !g.Start.IsZero() {
		dst = bsoncore.AppendTimeElement(dst, model.Start, g.Start)
		dst = bsoncore.AppendTimeElement(dst, model.End, g.End)
	}
	dst = bsoncore.AppendInt32Element(dst, model.Seq, int32(p.seq))
	dst, _ = bsoncore.AppendDocumentEnd(dst, ins)

	dst = b.appendPush(dst, p, recs, tag)
	dst = appendValues(dst, sum.Values)
	dst = appendInc(dst, p, sum, size)
	dst = b.appendMinMax(dst, g, sum)

	dst = append(dst, 0)
	return bson.Raw(bsoncore.UpdateLength(dst, at, int32(len(dst))-at))
}

// appendPush appends the $push of the records' entries and, with
// Idempotent, their op elements.
func (b *Buckets) appendPush(dst []byte, p *part, recs []*parser.Record, tag uint32) []byte {
	push, dst := bsoncore.AppendDocumentElementStart(dst, "$push")
	logs, dst := bsoncore.AppendDocumentElementStart(dst, model.Logs)
	each, dst := bsoncore.AppendArrayElementStart(dst, "$each")
	var idx []byte
	for i, r := range recs {
		idx = strconv.AppendInt(idx[:0], int64(i), 10)
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, string(idx))
		dst = append(dst, r.Doc...)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, each)
	dst, _ = bsoncore.AppendDocumentEnd(dst, logs)
	if b.cfg.Idempotent {
		ops, dst2 := bsoncore.AppendDocumentElementStart(dst, model.Ops)
		arr, dst3 := bsoncore.AppendArrayElementStart(dst2, "$each")
		dst3 = appendOps(dst3, tag, p.n)
		dst3, _ = bsoncore.AppendArrayEnd(dst3, arr)
		dst, _ = bsoncore.AppendDocumentEnd(dst3, ops)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, push)
	return dst
}

// appendValues appends the $addToSet of the keep_values values a write
// adds and the $set of the fields whose values did not all fit.
func appendValues(dst []byte, vals []bucketer.Values) []byte {
	var truncated []string
	adds := false
	for _, vs := range vals {
		if vs.Truncated {
			truncated = append(truncated, vs.Field)
		}
		adds = adds || len(vs.Vals) > 0
	}
	if adds { // an empty operator is an error
		add, d := bsoncore.AppendDocumentElementStart(dst, "$addToSet")
		for _, vs := range vals {
			if len(vs.Vals) == 0 {
				continue
			}
			field, d2 := bsoncore.AppendDocumentElementStart(d, model.Values+"."+vs.Field)
			arr, d3 := bsoncore.AppendArrayElementStart(d2, "$each")
			for i, v := range vs.Vals {
				d3 = bsoncore.AppendValueElement(d3, strconv.Itoa(i), v)
			}
			d3, _ = bsoncore.AppendArrayEnd(d3, arr)
			d, _ = bsoncore.AppendDocumentEnd(d3, field)
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, add)
	}
	if len(truncated) > 0 {
		set, d := bsoncore.AppendDocumentElementStart(dst, "$set")
		for _, f := range truncated {
			d = bsoncore.AppendBooleanElement(d, model.ValuesTruncated+"."+f, true)
		}
		dst, _ = bsoncore.AppendDocumentEnd(d, set)
	}
	return dst
}

// appendInc appends the $inc of the counters: entries, bytes, the stats'
// sums and counts, the count_by counts.
func appendInc(dst []byte, p *part, sum bucketer.Summary, size int) []byte {
	inc, dst := bsoncore.AppendDocumentElementStart(dst, "$inc")
	dst = bsoncore.AppendInt32Element(dst, model.Count, int32(p.n))
	dst = bsoncore.AppendInt64Element(dst, model.Bytes, int64(size))
	for _, s := range sum.Stats {
		if s.Float {
			dst = bsoncore.AppendDoubleElement(dst, model.Stat(s.Field, "sum"), s.Sum)
		} else {
			dst = bsoncore.AppendInt64Element(dst, model.Stat(s.Field, "sum"), s.IntSum)
		}
		// The numeric values summed: sum / n is the exact average.
		dst = bsoncore.AppendInt64Element(dst, model.Stat(s.Field, "n"), int64(s.N))
	}
	for _, c := range sum.Counts {
		dst = bsoncore.AppendInt32Element(dst, model.CountOf(c.Field, c.Value), int32(c.N))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, inc)
	return dst
}

// appendMinMax appends the $min and $max of the times and stats, and the
// bucket's expireAt when expiry is on.
func (b *Buckets) appendMinMax(dst []byte, g *bucketer.Group, sum bucketer.Summary) []byte {
	mn, dst := bsoncore.AppendDocumentElementStart(dst, "$min")
	dst = bsoncore.AppendTimeElement(dst, model.MinTs, sum.MinTs)
	for _, s := range sum.Stats {
		dst = appendNumber(dst, model.Stat(s.Field, "min"), s.Min, s.Float)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, mn)

	mx, dst := bsoncore.AppendDocumentElementStart(dst, "$max")
	dst = bsoncore.AppendTimeElement(dst, model.MaxTs, sum.MaxTs)
	for _, s := range sum.Stats {
		dst = appendNumber(dst, model.Stat(s.Field, "max"), s.Max, s.Float)
	}
	if b.cfg.Expiry.On() {
		dst = bsoncore.AppendTimeElement(dst, model.ExpireAt, b.cfg.Expiry.Bucket(g.ID, g.Key, g.End, sum.MaxTs))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, mx)
	return dst
}

// appendNumber appends v as an int64 when the values were integers.
func appendNumber(dst []byte, key string, v float64, isFloat bool) []byte {
	if isFloat {
		return bsoncore.AppendDoubleElement(dst, key, v)
	}
	return bsoncore.AppendInt64Element(dst, key, int64(v))
}
