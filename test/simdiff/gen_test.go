package simdiff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The generator makes operation sequences in the shapes the plugin sends:
// bucket upserts as writer/encode.go builds them, against the state a
// model of its own holds, so that statements match, insert and collide in
// the proportions a writer meets; the finds of writer/read.go, insert.go,
// dropped.go and sink/probe.go; flat and dead-letter inserts; replacements
// by an own id; and retention's deletes and drops.

// Collections the generator writes.
const (
	bucketColl = "logs"
	otherColl  = "logs_other"
	flatColl   = "flat"
	letterColl = "deadletter"
)

// group is a bucket group: its id, key document and window start.
type group struct {
	id    string
	key   bsoncore.Document
	start time.Time // zero: no window
	coll  string
}

type gen struct {
	rng    *rand.Rand
	model  *server.Server // the state the sequence leads to, to aim statements
	ops    []server.Op
	groups []group
	tags   []uint32 // chunk tags of the op elements
	flat   []bsoncore.Value
	oid    uint64
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// generate makes a sequence of about n ops from seed.
func generate(seed uint64, n int) []server.Op {
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), model: server.New()}
	for i := range 7 {
		b := bsoncore.NewDocumentBuilder().AppendString("module", []string{"pay", "auth", "db", "web"}[i%4])
		if i%3 == 0 {
			b.AppendNull("pod")
		} else {
			b.AppendString("pod", "p"+strconv.Itoa(i))
		}
		grp := group{id: fmt.Sprintf("g%d", i), key: b.Build(), coll: bucketColl}
		if i%2 == 0 {
			grp.start = t0.Add(time.Duration(i/2) * time.Minute)
		}
		if i == 6 {
			grp.coll = otherColl
		}
		g.groups = append(g.groups, grp)
	}
	for range 3 {
		g.tags = append(g.tags, g.rng.Uint32()>>4)
	}
	for len(g.ops) < n {
		switch r := g.rng.IntN(100); {
		case r < 30:
			g.upserts()
		case r < 37:
			g.fence()
		case r < 40:
			g.seal()
		case r < 45 && len(g.ops) > 0:
			g.repeat()
		case r < 70:
			g.find()
		case r < 82:
			g.insertMany()
		case r < 85:
			g.replace()
		case r < 88:
			g.fenceVersion()
		case r < 94:
			g.delete()
		case r < 96:
			g.emit(server.Op{Kind: server.Drop, Coll: []string{flatColl, letterColl, otherColl}[g.rng.IntN(3)]})
		default:
			g.emit(server.Op{Kind: server.Ping})
		}
	}
	return g.ops
}

func (g *gen) emit(op server.Op) {
	g.model.Apply(op)
	g.ops = append(g.ops, op)
}

// repeat sends an earlier upsert command again, as a writer repeats a
// command whose reply it lost.
func (g *gen) repeat() {
	for k := len(g.ops) - 1; k >= max(0, len(g.ops)-10); k-- {
		if g.ops[k].Kind == server.Upserts {
			g.emit(g.ops[k])
			return
		}
	}
}

// bucketState is the newest bucket of grp in the generator's model: its
// seq and count, or -1.
func (g *gen) bucketState(grp group) (seq, count int) {
	seq = -1
	for _, d := range g.model.Docs(grp.coll) {
		id, _ := d.Lookup(model.ID).StringValueOK()
		var s int
		if _, err := fmt.Sscanf(id, grp.id+"-%d", &s); err != nil || id != grp.id+"-"+strconv.Itoa(s) || s < seq {
			continue
		}
		seq, count = s, int(d.Lookup(model.Count).Int32())
	}
	return seq, count
}

// upserts sends 1 to 20 bucket writes to distinct buckets of one
// collection, each aimed to match, insert or collide.
func (g *gen) upserts() {
	coll := bucketColl
	if g.rng.IntN(6) == 0 {
		coll = otherColl
	}
	n := 1
	if g.rng.IntN(3) > 0 {
		n = 1 + g.rng.IntN(20)
	}
	var ups []writer.Upsert
	used := map[string]bool{}
	for range 3 * n {
		if len(ups) == n {
			break
		}
		grp := g.groups[g.rng.IntN(len(g.groups))]
		if grp.coll != coll {
			continue
		}
		seq, count := g.bucketState(grp)
		switch r := g.rng.IntN(10); {
		case seq < 0 || r < 3: // the next bucket
			seq, count = seq+1, 0
		case r < 7: // the newest as it is: matches
		case r < 8: // a stale count: collides
			count += []int{-1, 1}[g.rng.IntN(2)]
		case r < 9 && seq > 0: // an older bucket, full: collides
			seq--
		default: // a bucket not written yet, at a count: inserts one
			seq, count = seq+1+g.rng.IntN(2), 1+g.rng.IntN(3)
		}
		id := grp.id + "-" + strconv.Itoa(seq)
		if used[id] || count < 0 {
			continue
		}
		used[id] = true
		ups = append(ups, g.bucketWrite(grp, seq, count))
	}
	if len(ups) > 0 {
		g.emit(server.Op{Kind: server.Upserts, Coll: coll, Ups: ups})
	}
}

// seal is the fence of some groups' buckets (writer's Buckets.seal): an
// updateMany sealing every bucket not sealed for good.
func (g *gen) seal() {
	grp := g.pickGroup()
	f := g.bucketsOf(grp)
	f.AppendDocument(model.Sealed, bsoncore.NewDocumentBuilder().AppendBoolean("$ne", true).Build())
	u := bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendBoolean(model.Sealed, true).Build()).Build()
	g.emit(server.Op{Kind: server.UpdateMany, Coll: grp.coll, Ups: []writer.Upsert{{Filter: bson.Raw(f.Build()), Update: bson.Raw(u)}}})
}

// bucketsOf starts the filter of grp's buckets: its key, and start.
func (g *gen) bucketsOf(grp group) *bsoncore.DocumentBuilder {
	f := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, grp.key)
	if !grp.start.IsZero() {
		f.AppendDateTime(model.Start, grp.start.UnixMilli())
	}
	return f
}

// fence sends a placeholder (writer's Buckets.placeholder) into a group's
// next bucket, or its newest, or records a record parked in a bucket
// (writer's Buckets.parkedIn), as refence does.
func (g *gen) fence() {
	grp := g.pickGroup()
	seq, _ := g.bucketState(grp)
	placeholder := g.rng.IntN(3) > 0
	if placeholder && g.rng.IntN(3) > 0 || !placeholder && g.rng.IntN(4) == 0 {
		seq++ // the next bucket, or a newest placeholder's
	}
	seq = max(seq, 0)
	if placeholder {
		ins := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, grp.key)
		if !grp.start.IsZero() {
			ins.AppendDateTime(model.Start, grp.start.UnixMilli()).AppendDateTime(model.End, grp.start.Add(time.Minute).UnixMilli())
		}
		ins.AppendInt32(model.Seq, int32(seq)).AppendInt32(model.Count, 0).AppendInt64(model.Bytes, 0)
		u := bsoncore.NewDocumentBuilder().AppendDocument("$setOnInsert", ins.Build()).
			AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendInt32(model.Sealed, 1).Build()).Build()
		f := bucketNamed(grp, seq).AppendDocument(model.Sealed, bsoncore.NewDocumentBuilder().AppendBoolean("$ne", true).Build())
		g.emit(server.Op{Kind: server.Upserts, Coll: grp.coll, Ups: []writer.Upsert{{Filter: bson.Raw(f.Build()), Update: bson.Raw(u), Insert: true}}})
		if g.rng.IntN(3) == 0 {
			return
		}
	}
	tag := g.tags[g.rng.IntN(len(g.tags))]
	rec := bsoncore.NewDocumentBuilder().AppendInt32(model.ParkedOp, int32(tag<<4|1)).
		AppendInt32(model.ParkedIndex, int32(g.rng.IntN(20))).AppendInt64(model.ParkedHash, g.rng.Int64()).
		AppendString(model.ParkedReason, "refused by MongoDB: dropped").Build()
	u := bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendBoolean(model.Sealed, true).AppendDocument(model.Parked, rec).Build()).Build()
	f := bucketNamed(grp, seq).AppendInt32(model.Sealed, 1)
	g.emit(server.Op{Kind: server.Upserts, Coll: grp.coll, Ups: []writer.Upsert{{Filter: bson.Raw(f.Build()), Update: bson.Raw(u)}}})
}

// bucketNamed starts a filter naming bucket seq of grp, as the writer's
// statements do: its _id, key fields and window start.
func bucketNamed(grp group, seq int) *bsoncore.DocumentBuilder {
	f := bsoncore.NewDocumentBuilder().AppendString(model.ID, grp.id+"-"+strconv.Itoa(seq))
	elems, _ := grp.key.Elements()
	for _, e := range elems {
		f.AppendValue(model.Key+"."+e.Key(), e.Value())
	}
	if !grp.start.IsZero() {
		f.AppendDateTime(model.Start, grp.start.UnixMilli())
	}
	return f
}

// bucketWrite is the statement of a write of some records into bucket
// seq of grp holding count entries, as writer/encode.go builds it.
func (g *gen) bucketWrite(grp group, seq, count int) writer.Upsert {
	f := bucketNamed(grp, seq)
	f.AppendInt32(model.Count, int32(count))
	f.AppendDocument(model.Sealed, bsoncore.NewDocumentBuilder().AppendBoolean("$exists", false).Build())

	n := 1 + g.rng.IntN(4)
	levels := []string{"info", "warn", "error", "200", "1000"}
	logs := bsoncore.NewArrayBuilder()
	var minTs, maxTs time.Time
	var size int64
	floats := g.rng.IntN(4) == 0
	var isum int64
	var fsum, mn, mx float64
	counts := map[string]int32{}
	var vals []string
	for i := range n {
		ts := t0.Add(time.Duration(g.rng.IntN(3600)) * time.Second)
		if minTs.IsZero() || ts.Before(minTs) {
			minTs = ts
		}
		if ts.After(maxTs) {
			maxTs = ts
		}
		level := levels[g.rng.IntN(len(levels))]
		cost := g.rng.IntN(1000) - 100
		r := bsoncore.NewDocumentBuilder().AppendDateTime("ts", ts.UnixMilli()).AppendString("level", level).
			AppendString("msg", fmt.Sprintf("m%d", g.rng.IntN(1000)))
		if floats {
			c := float64(cost) + 0.25
			r.AppendDouble("cost", c)
			fsum += c
			if i == 0 || c < mn {
				mn = c
			}
			if i == 0 || c > mx {
				mx = c
			}
		} else {
			r.AppendInt32("cost", int32(cost))
			isum += int64(cost)
			if i == 0 || float64(cost) < mn {
				mn = float64(cost)
			}
			if i == 0 || float64(cost) > mx {
				mx = float64(cost)
			}
		}
		doc := r.Build()
		size += int64(len(doc))
		logs.AppendDocument(doc)
		counts[level]++
		if !slices.Contains(vals, level) {
			vals = append(vals, level)
		}
	}

	u := bsoncore.NewDocumentBuilder()
	ins := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, grp.key)
	if !grp.start.IsZero() {
		ins.AppendDateTime(model.Start, grp.start.UnixMilli()).AppendDateTime(model.End, grp.start.Add(time.Minute).UnixMilli())
	}
	u.AppendDocument("$setOnInsert", ins.AppendInt32(model.Seq, int32(seq)).Build())

	push := bsoncore.NewDocumentBuilder().AppendDocument(model.Logs, bsoncore.NewDocumentBuilder().AppendArray("$each", logs.Build()).Build())
	if g.rng.IntN(5) > 0 { // idempotent writes record their op elements
		tag := g.tags[g.rng.IntN(len(g.tags))]
		ops := bsoncore.NewArrayBuilder().AppendInt32(int32(tag<<4 | uint32(n)))
		push.AppendDocument(model.Ops, bsoncore.NewDocumentBuilder().AppendArray("$each", ops.Build()).Build())
	}
	u.AppendDocument("$push", push.Build())

	if g.rng.IntN(2) == 0 { // keep_values
		each := bsoncore.NewArrayBuilder()
		for _, v := range vals {
			each.AppendString(v)
		}
		if g.rng.IntN(4) == 0 {
			each.AppendInt32(int32(g.rng.IntN(2))) // a number among the values
		}
		u.AppendDocument("$addToSet", bsoncore.NewDocumentBuilder().AppendDocument(model.Values+".level",
			bsoncore.NewDocumentBuilder().AppendArray("$each", each.Build()).Build()).Build())
		if g.rng.IntN(5) == 0 {
			u.AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendBoolean(model.ValuesTruncated+".level", true).Build())
		}
	}

	inc := bsoncore.NewDocumentBuilder().AppendInt32(model.Count, int32(n)).AppendInt64(model.Bytes, size)
	if floats {
		inc.AppendDouble(model.Stat("cost", "sum"), fsum)
	} else {
		inc.AppendInt64(model.Stat("cost", "sum"), isum)
	}
	inc.AppendInt64(model.Stat("cost", "n"), int64(n))
	for _, l := range levels {
		if counts[l] > 0 {
			inc.AppendInt32(model.Counts+".level."+l, counts[l])
		}
	}
	u.AppendDocument("$inc", inc.Build())

	number := func(b *bsoncore.DocumentBuilder, key string, v float64) {
		if floats {
			b.AppendDouble(key, v)
		} else {
			b.AppendInt64(key, int64(v))
		}
	}
	mnd := bsoncore.NewDocumentBuilder().AppendDateTime(model.MinTs, minTs.UnixMilli())
	number(mnd, model.Stat("cost", "min"), mn)
	u.AppendDocument("$min", mnd.Build())
	mxd := bsoncore.NewDocumentBuilder().AppendDateTime(model.MaxTs, maxTs.UnixMilli())
	number(mxd, model.Stat("cost", "max"), mx)
	if g.rng.IntN(3) == 0 {
		mxd.AppendDateTime(model.ExpireAt, maxTs.Add(24*time.Hour).UnixMilli())
	}
	u.AppendDocument("$max", mxd.Build())
	// As the writer sends it: only a bucket's first write inserts it.
	return writer.Upsert{Filter: bson.Raw(f.Build()), Update: bson.Raw(u.Build()), Insert: count == 0}
}

// Projections and sort the writer's reads use (writer/read.go).
var (
	fillProjection    = doc("seq", 1, "count", 1, "bytes", 1, "ops", 1, "values", 1, "sealed", 1)
	entriesProjection = doc("seq", 1, "count", 1, "bytes", 1, "ops", 1, "values", 1, "sealed", 1, "logs", 1)
	runsProjection    = doc("ops", 1, "logs", 1, "parked", 1)
	bySeqDesc         = doc("seq", -1)
)

// doc builds a document of int32 fields: key, value, key, value...
func doc(kv ...any) bson.Raw {
	b := bsoncore.NewDocumentBuilder()
	for i := 0; i < len(kv); i += 2 {
		b.AppendInt32(kv[i].(string), int32(kv[i+1].(int)))
	}
	return bson.Raw(b.Build())
}

func (g *gen) pickGroup() group { return g.groups[g.rng.IntN(len(g.groups))] }

// find sends one of the plugin's reads.
func (g *gen) find() {
	grp := g.pickGroup()
	switch g.rng.IntN(8) {
	case 0, 1: // a bucket by _id (read)
		seq, _ := g.bucketState(grp)
		proj := fillProjection
		if g.rng.IntN(2) == 0 {
			proj = entriesProjection
		}
		id := grp.id + "-" + strconv.Itoa(max(seq-g.rng.IntN(2), 0))
		g.emit(server.Op{Kind: server.Find, Coll: grp.coll, Filter: bson.Raw(bsoncore.NewDocumentBuilder().AppendString(model.ID, id).Build()),
			Query: writer.Query{Projection: proj}})
	case 2: // the group's newest bucket (read, groupFilter)
		f := bsoncore.NewDocumentBuilder().AppendDocument(model.Key, grp.key)
		if !grp.start.IsZero() {
			f.AppendDateTime(model.Start, grp.start.UnixMilli())
		}
		g.emit(server.Op{Kind: server.Find, Coll: grp.coll, Filter: bson.Raw(f.Build()),
			Query: writer.Query{Projection: fillProjection, Sort: bySeqDesc, Limit: 1}})
	case 3, 4: // what a chunk stored (Stored, storedFilter)
		g.emit(server.Op{Kind: server.Find, Coll: bucketColl, Filter: g.storedFilter(), Query: writer.Query{Projection: runsProjection}})
	case 5: // flat documents stored already (existing), with or without their bodies
		q := writer.Query{Projection: writer.IDProjection}
		if g.rng.IntN(2) == 0 {
			q = writer.Query{}
		}
		g.emit(server.Op{Kind: server.Find, Coll: flatColl, Filter: g.idIn(), Query: q})
	case 6: // the control of a dropped connection (dropped.go)
		pad := make([]byte, 16+g.rng.IntN(64))
		for i := range pad {
			pad[i] = byte(g.rng.IntN(256))
		}
		f := bsoncore.NewDocumentBuilder().AppendDocument(model.ID, bsoncore.NewDocumentBuilder().
			AppendArray("$in", bsoncore.NewArrayBuilder().AppendBinary(0, pad).Build()).Build()).Build()
		g.emit(server.Op{Kind: server.Find, Coll: flatColl, Filter: bson.Raw(f), Query: writer.Query{Projection: writer.IDProjection, Limit: 1}})
	default: // a later generation's dead letters (sink/probe.go)
		id := fmt.Sprintf("c%d", g.rng.IntN(3))
		f := bsoncore.NewDocumentBuilder().AppendDocument(model.ID, bsoncore.NewDocumentBuilder().
			AppendString("$gte", id+":").AppendString("$lt", id+";").Build()).Build()
		g.emit(server.Op{Kind: server.Find, Coll: letterColl, Filter: bson.Raw(f), Query: writer.Query{Projection: writer.IDProjection, Limit: 1}})
	}
}

// storedFilter is writer's storedFilter for some groups of the bucket
// collection and a tag: key $in by start, in $or when the starts differ;
// sometimes a key with its fields reordered, which matches nothing.
func (g *gen) storedFilter() bson.Raw {
	byStart := map[int64]*bsoncore.ArrayBuilder{}
	var starts []time.Time
	tag := g.tags[g.rng.IntN(len(g.tags))]
	parkedIn, parkedTag, ok := g.parkedGroup()
	if ok && g.rng.IntN(2) == 0 {
		tag = parkedTag // look for a record parked
	} else {
		ok = false
	}
	for k := range 1 + g.rng.IntN(3) {
		grp := g.pickGroup()
		if k == 0 && ok {
			grp = parkedIn
		}
		if grp.coll != bucketColl {
			continue
		}
		ms := grp.start.UnixMilli()
		if byStart[ms] == nil {
			byStart[ms] = bsoncore.NewArrayBuilder()
			starts = append(starts, grp.start)
		}
		key := grp.key
		if g.rng.IntN(8) == 0 {
			els, _ := key.Elements()
			b := bsoncore.NewDocumentBuilder()
			for i := len(els) - 1; i >= 0; i-- {
				b.AppendValue(els[i].Key(), els[i].Value())
			}
			key = b.Build()
		}
		byStart[ms].AppendDocument(key)
	}
	if len(starts) == 0 {
		grp := g.groups[0]
		starts = append(starts, grp.start)
		byStart[grp.start.UnixMilli()] = bsoncore.NewArrayBuilder().AppendDocument(grp.key)
	}
	in := bsoncore.NewArrayBuilder()
	for n := 1; n <= 15; n++ {
		in.AppendInt32(int32(tag<<4 | uint32(n)))
	}
	tags := bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build()
	clause := func(s time.Time) bsoncore.Document {
		c := bsoncore.NewDocumentBuilder().AppendDocument(model.Key,
			bsoncore.NewDocumentBuilder().AppendArray("$in", byStart[s.UnixMilli()].Build()).Build())
		if !s.IsZero() {
			c.AppendDateTime(model.Start, s.UnixMilli())
		}
		return c.AppendArray("$or", bsoncore.NewArrayBuilder().
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(model.Ops, tags).Build()).
			AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(model.Parked+"."+model.ParkedOp, tags).Build()).
			Build()).Build()
	}
	f := bsoncore.NewDocumentBuilder()
	if len(starts) == 1 {
		els, _ := clause(starts[0]).Elements()
		for _, e := range els {
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

// parkedGroup is a group of the bucket collection with a bucket holding a
// record parked, and that record's tag.
func (g *gen) parkedGroup() (group, uint32, bool) {
	for _, grp := range g.groups {
		if grp.coll != bucketColl {
			continue
		}
		for _, d := range g.model.Docs(bucketColl) {
			id, _ := d.Lookup(model.ID).StringValueOK()
			op, ok := d.Lookup(model.Parked, model.ParkedOp).Int32OK()
			if ok && strings.HasPrefix(id, grp.id+"-") {
				return grp, uint32(op) >> 4, true
			}
		}
	}
	return group{}, 0, false
}

// idIn is a filter of _ids $in: some stored flat ids, some new.
func (g *gen) idIn() bson.Raw {
	ids := bsoncore.NewArrayBuilder()
	for range 1 + g.rng.IntN(6) {
		id := g.flatID(true)
		if id.Type == bsoncore.TypeInt32 && g.rng.IntN(3) == 0 {
			// The same number as an int64: the same _id.
			id = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(id.Int32()))}
		}
		ids.AppendValue(id)
	}
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument(model.ID,
		bsoncore.NewDocumentBuilder().AppendArray("$in", ids.Build()).Build()).Build())
}

// flatID is an _id of a flat document: a stored one (with old) or a new
// ObjectId, string, int32 or int64 (an own id, as sink.RecordID makes it).
func (g *gen) flatID(old bool) bsoncore.Value {
	if old && len(g.flat) > 0 && g.rng.IntN(2) == 0 {
		return g.flat[g.rng.IntN(len(g.flat))]
	}
	var v bsoncore.Value
	switch g.rng.IntN(5) {
	case 0, 1:
		g.oid++
		var oid [12]byte
		oid[0], oid[11] = 0x66, byte(g.oid)
		oid[10] = byte(g.oid >> 8)
		v = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
	case 2:
		v = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, fmt.Sprintf("ev-%d", g.rng.IntN(40)))}
	case 3:
		v = bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(g.rng.IntN(40)))}
	default:
		v = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 1<<40+int64(g.rng.IntN(40)))}
	}
	g.flat = append(g.flat, v)
	return v
}

// flatDoc is a flat document of id.
func (g *gen) flatDoc(id bsoncore.Value) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendString("tag", "app").
		AppendDateTime("ts", t0.Add(time.Duration(g.rng.IntN(3600))*time.Second).UnixMilli()).
		AppendString("msg", fmt.Sprintf("m%d", g.rng.IntN(100))).AppendInt64("n", int64(g.rng.IntN(9))).Build())
}

// insertMany inserts flat documents (some stored already) or dead
// letters.
func (g *gen) insertMany() {
	var docs []bson.Raw
	if g.rng.IntN(3) == 0 {
		chunk := fmt.Sprintf("c%d", g.rng.IntN(3))
		for range 1 + g.rng.IntN(3) {
			docs = append(docs, bson.Raw(bsoncore.NewDocumentBuilder().
				AppendString(model.ID, fmt.Sprintf("%s:%d", chunk, g.rng.IntN(6))).AppendString("tag", "app").
				AppendString(model.Reason, "refused").AppendString(model.Chunk, chunk).
				AppendDateTime(model.ParkedAt, t0.UnixMilli()).AppendString(model.Format, "bson").
				AppendInt64(model.Size, 3).AppendBinary(model.Raw, 0, []byte{1, 2, 3}).Build()))
		}
		g.emit(server.Op{Kind: server.InsertMany, Coll: letterColl, Docs: docs})
		return
	}
	seen := map[string]bool{}
	for range 1 + g.rng.IntN(8) {
		id := g.flatID(g.rng.IntN(3) == 0)
		k := string(id.Data) + string(rune(id.Type))
		if seen[k] && g.rng.IntN(2) == 0 {
			continue
		}
		seen[k] = true
		docs = append(docs, g.flatDoc(id))
	}
	g.emit(server.Op{Kind: server.InsertMany, Coll: flatColl, Docs: docs})
}

// replace replaces flat documents of own ids, stored or not (id_action
// replace): ids distinct in one command, as sink.sortFlat keeps the last,
// most with a version (writer.ReplaceAll), older or newer than the one
// stored: the guard (writer.VersionGuard) lets only newer ones apply.
func (g *gen) replace() {
	var docs []bson.Raw
	seen := map[string]bool{}
	for range 1 + g.rng.IntN(4) {
		id := g.flatID(true)
		if k := string(id.Data) + string(rune(id.Type)); !seen[k] {
			seen[k] = true
			d := g.flatDoc(id)
			if g.rng.IntN(5) > 0 {
				d = bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendString("msg", fmt.Sprintf("m%d", g.rng.IntN(100))).
					AppendInt64(model.Version, g.version()).Build())
			}
			docs = append(docs, d)
		}
	}
	if len(docs) > 0 {
		g.emit(server.Op{Kind: server.Replace, Coll: flatColl, Docs: docs})
	}
}

// version is a replacement's version: from a small range, so that older,
// equal and newer ones meet.
func (g *gen) version() int64 { return 1<<40 + int64(g.rng.IntN(12)) }

// fenceVersion sends the fence of a replacement about to be parked
// (writer.fenceVersion): a stand-in, the raise of an older version, and
// the mark of the record parked at the version.
func (g *gen) fenceVersion() {
	id := g.flatID(true)
	v := g.version()
	mark := bsoncore.NewDocumentBuilder().AppendInt64(model.ParkedHash, g.rng.Int64N(1<<40)).Build()
	standIn := bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendBoolean(model.Sealed, true).
		AppendInt64(model.Version, v).AppendDocument(model.Parked, mark).Build())
	g.emit(server.Op{Kind: server.InsertMany, Coll: flatColl, Docs: []bson.Raw{standIn}})
	guard, err := bson.Marshal(writer.VersionGuard(bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendInt64(model.Version, v).Build())))
	if err != nil {
		panic(err)
	}
	raise := bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendInt64(model.Version, v).AppendBoolean(model.Raised, true).Build()).Build()
	g.emit(server.Op{Kind: server.UpdateMany, Coll: flatColl, Ups: []writer.Upsert{{Filter: guard, Update: bson.Raw(raise)}}})
	g.emit(server.Op{Kind: server.Find, Coll: flatColl, Filter: bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).Build()), Query: writer.Query{Limit: 1}})
	at := bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendInt64(model.Version, v).Build()
	set := bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendDocument(model.Parked, mark).Build()).Build()
	g.emit(server.Op{Kind: server.UpdateMany, Coll: flatColl, Ups: []writer.Upsert{{Filter: bson.Raw(at), Update: bson.Raw(set)}}})
}

// delete sends one of retention's deletes: by _id $in (TTL), by $or of
// {_id, count, ops} (export's prune), or by time (ExpiredBy).
func (g *gen) delete() {
	switch g.rng.IntN(3) {
	case 0:
		g.emit(server.Op{Kind: server.Delete, Coll: flatColl, Filter: g.idIn()})
	case 1:
		docs := g.model.Docs(bucketColl)
		or := bsoncore.NewArrayBuilder()
		for range 1 + g.rng.IntN(3) {
			if len(docs) == 0 {
				break
			}
			d := docs[g.rng.IntN(len(docs))]
			c := bsoncore.NewDocumentBuilder().AppendValue(model.ID, bsoncore.Value{Type: bsoncore.Type(d.Lookup(model.ID).Type), Data: d.Lookup(model.ID).Value})
			count := d.Lookup(model.Count).Int32()
			if g.rng.IntN(3) == 0 {
				count++ // grew since the export: kept
			}
			c.AppendInt32(model.Count, count)
			if ops, ok := d.Lookup(model.Ops).ArrayOK(); ok {
				c.AppendArray(model.Ops, bsoncore.Document(ops))
			}
			or.AppendDocument(c.Build())
		}
		if len(docs) == 0 {
			return
		}
		g.emit(server.Op{Kind: server.Delete, Coll: bucketColl, Filter: bson.Raw(bsoncore.NewDocumentBuilder().AppendArray("$or", or.Build()).Build())})
	default:
		cut := t0.Add(time.Duration(g.rng.IntN(3600)) * time.Second)
		f := bsoncore.NewDocumentBuilder().AppendDocument(model.MaxTs, bsoncore.NewDocumentBuilder().AppendDateTime("$lt", cut.UnixMilli()).Build())
		g.emit(server.Op{Kind: server.Delete, Coll: []string{bucketColl, otherColl}[g.rng.IntN(2)], Filter: bson.Raw(f.Build())})
	}
}
