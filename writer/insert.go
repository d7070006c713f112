package writer

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Doc is a document to insert with its _id.
type Doc struct {
	ID  bsoncore.Value
	Raw bson.Raw
}

// Refused is a document MongoDB will not store, with the reason.
type Refused struct {
	Index  int // into the docs given to InsertAll
	Reason string
}

// InsertAll inserts docs unordered so that each ends up stored exactly once:
// a document whose _id already exists counts as stored (an earlier attempt
// wrote it). Documents MongoDB refuses are returned, found by splitting the
// batch in halves when the server does not say which document it refuses
// (or drops the connection on the batch while answering otherwise); an
// error means the flush deadline passed with documents still unwritten.
//
// limit, when above 0, caps the documents per insert: the search for
// unstorable content goes on where an earlier attempt left it. The
// documents stored already are looked up first then, and not sent again:
// inserted a few at a time, each answered DuplicateKey and looked up, they
// would take an attempt's time before the search is reached. drops holds,
// by index in docs, the connections a document inserted alone lost in a
// row in earlier attempts (an earlier Inserted.Drops).
func InsertAll(ctx context.Context, store Store, coll string, docs []Doc, retry Retry, limit int, drops map[int]int) (Inserted, error) {
	ins := &inserter{store: store, retry: retry, flatProto: flatProto{coll: coll, docs: docs, limit: limit, drops: drops}}
	if limit > 0 {
		if err := ins.skipStored(ctx); err != nil {
			return Inserted{Limit: limit, Drops: drops}, err
		}
	}
	return ins.all(ctx)
}

// ReplaceAll is InsertAll for documents that replace the one of their _id
// (Store.Replace), at most batch to a command (an update command, which
// some servers cannot take large): the last one sent wins. Each document
// is written with version (model.Version), which its caller makes larger
// than every version it or an earlier process of it sent before, and
// replaces only a document of an older version (or none): a write held
// in the network that lands late finds a newer version and applies
// nothing. A document whose _id holds a version as new or newer counts as
// stored already (Existed): written, or superseded by a later sender.
func ReplaceAll(ctx context.Context, store Store, coll string, docs []Doc, retry Retry, limit, batch int, drops map[int]int, version int64) (Inserted, error) {
	versioned := make([]Doc, len(docs))
	for i, d := range docs {
		versioned[i] = Doc{ID: d.ID, Raw: withVersion(d.Raw, version)}
	}
	ins := &inserter{store: store, retry: retry, batch: batch, flatProto: flatProto{coll: coll, docs: versioned, limit: limit, drops: drops, replace: true, version: version}}
	if err := ins.skipStored(ctx); err != nil {
		return Inserted{Limit: limit, Drops: drops}, err
	}
	return ins.all(ctx)
}

// skipStored looks up which documents are stored already (with replace,
// at this version or a newer one), counts them as existing and leaves
// them out of the writes.
func (ins *inserter) skipStored(ctx context.Context) error {
	all := make([]int, len(ins.docs))
	for i := range all {
		all[i] = i
	}
	stored, err := lookup(ctx, ins.store, ins.coll, ins.docs, all, ins.version, ins.retry)
	if err != nil {
		return fmt.Errorf("reading %s: %w", ins.coll, err)
	}
	ins.skip = map[int]bool{}
	for i, h := range stored {
		ins.skip[i] = true
		if h == heldByStandIn {
			ins.refused = append(ins.refused, Refused{Index: i, Reason: fencedEarlier})
		} else {
			ins.existed++
		}
	}
	return nil
}

// lookup is existing for any number of documents: in parts (lookupPart),
// each retried.
func lookup(ctx context.Context, store Store, coll string, docs []Doc, pending []int, version int64, retry Retry) (map[int]holding, error) {
	stored := map[int]holding{}
	for len(pending) > 0 {
		part := pending[:lookupPart(docs, pending)]
		pending = pending[len(part):]
		var found map[int]holding
		if err := retry.Do(ctx, func() (err error) {
			found, err = existing(ctx, store, coll, docs, part, version)
			return err
		}); err != nil {
			return nil, err
		}
		maps.Copy(stored, found)
	}
	return stored, nil
}

// Bounds of one look-up of stored documents: its ids, and their bytes
// (an _id can be any value up to the document's size).
const (
	lookupIDs   = 1000
	lookupBytes = 1 << 20
)

// lookupPart is how many of pending, from the first, one look-up takes.
func lookupPart(docs []Doc, pending []int) int {
	n, size := 0, 0
	for n < len(pending) && n < lookupIDs {
		size += len(docs[pending[n]].ID.Data)
		if n > 0 && size > lookupBytes {
			break
		}
		n++
	}
	return n
}

// all writes the inserter's documents but those in skip, at most limit
// (and batch) at a time.
func (ins *inserter) all(ctx context.Context) (Inserted, error) {
	size := len(ins.docs)
	if ins.limit > 0 {
		size = ins.limit
	}
	if ins.batch > 0 {
		size = min(size, ins.batch)
	}
	left := make([]int, 0, len(ins.docs)-len(ins.skip))
	for i := range ins.docs {
		if !ins.skip[i] {
			left = append(left, i)
		}
	}
	// Those the look-up found fenced by an earlier attempt are parked.
	out := Inserted{Refused: ins.refused}
	for len(left) > 0 {
		pending := left[:min(size, len(left)):min(size, len(left))]
		left = left[len(pending):]
		more, err := ins.insert(ctx, pending)
		out.Refused = append(out.Refused, more...)
		if err != nil {
			out.Limit, out.Existed, out.Drops = ins.limit, ins.existed, ins.lost
			return out, err
		}
	}
	out.Existed = ins.existed
	return out, nil
}

// Inserted is what InsertAll did.
type Inserted struct {
	Refused []Refused
	// Limit is where the search for unstorable content stood when an
	// error ended it (0 if none).
	Limit int
	// Existed counts the documents found stored already after an insert
	// failed: stored by an earlier attempt, or by the failed insert itself.
	Existed int
	// Drops, when a document inserted alone was losing its connection as
	// an error ended InsertAll, holds its count by index in docs.
	Drops map[int]int
}

// inserter is one InsertAll or ReplaceAll: the executor of its flat
// protocol.
type inserter struct {
	flatProto
	store Store
	retry Retry
	skip  map[int]bool // stored already, not to write
	batch int          // the most documents per command; 0: no bound
}

// put sends batch as one insert or replace command.
func (ins *inserter) put(ctx context.Context, batch []bson.Raw) error {
	if ins.replace {
		return ins.store.Replace(ctx, ins.coll, batch)
	}
	return ins.store.InsertMany(ctx, ins.coll, batch)
}

// insert writes pending, carrying out what the flat protocol asks until it
// is done, and returns the documents refused.
func (ins *inserter) insert(ctx context.Context, pending []int) ([]Refused, error) {
	a := ins.begin(pending)
	for {
		switch a.kind {
		case flatPut:
			batch := make([]bson.Raw, len(a.pending))
			for i, p := range a.pending {
				batch[i] = ins.docs[p].Raw
			}
			a = ins.onPut(ins.put(ctx, batch))
		case flatControl:
			p := sendControl(ctx, ins.store, ins.coll, a.bytes)
			a = ins.onControl(p)
		case flatPing:
			a = ins.onPing(ctx.Err() == nil && ins.store.Ping(ctx) == nil)
		case flatFind:
			a = ins.onFind(existing(ctx, ins.store, ins.coll, ins.docs, a.pending, ins.version))
		case flatBackoff:
			a = ins.onBackoff(ins.retry.Wait(ctx, a.attempt))
		case flatFence:
			if ins.replace {
				a = ins.onFenced(fenceVersion(ctx, ins.store, ins.coll, ins.docs[a.pending[0]], ins.version))
			} else {
				a = ins.onFenced(fence(ctx, ins.store, ins.coll, ins.docs[a.pending[0]].ID))
			}
		case flatDone:
			return ins.refused, nil
		default:
			return ins.refused, a.err
		}
	}
}

// poisonOf is, by document index, why the server refused documents of
// pending for their content in err.
func poisonOf(err error, pending []int) map[int]string {
	poison := map[int]string{}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		for _, we := range bwe.WriteErrors {
			if errkind.Of(we) == errkind.Poison && we.Index >= 0 && we.Index < len(pending) {
				poison[pending[we.Index]] = we.Message
			}
		}
	} else if errkind.Of(err) == errkind.Poison && len(pending) == 1 {
		poison[pending[0]] = err.Error()
	}
	return poison
}

// existedBefore is, when the server answered the write of pending with
// err, the documents it named as existing already (DuplicateKey: an
// insert's _id taken, or a replacement's version not newer than the one
// stored): the others found stored after it are this write's. nil when it
// did not answer (a lost reply): every document found stored then counts
// as existing, the write's own included.
func existedBefore(err error, pending []int) map[int]bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return nil
	}
	dup := map[int]bool{}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(pending) {
			return nil // not an answer about these statements
		}
		if errkind.Of(we) == errkind.Duplicate {
			dup[pending[we.Index]] = true
		}
	}
	return dup
}

// holding is what holds a document's _id.
type holding uint8

const (
	heldByNone    holding = iota
	heldByDoc             // the document (with a version, at that version or a newer one)
	heldByStandIn         // the stand-in of the record, or its mark: it is parked (see fence, fenceVersion)
)

// fencedEarlier is the reason a record is parked with when its stand-in
// holds its _id: an earlier attempt fenced its insert before parking it.
const fencedEarlier = "refused by MongoDB: the server kept closing the connection on this record alone; an earlier attempt fenced its insert (a stand-in holds its _id) before parking it"

// existing reports which of the pending documents are already stored: a
// document of their _id, or with version (replacements), the document
// itself at that version or any of a newer one; or the record's stand-in
// (with version, a stand-in or document marked with the record's content,
// see fenceVersion). A fence may have raised another content to the
// version: that one does not count. Ids are told apart by type and value, so documents that
// share one are all reported.
func existing(ctx context.Context, store Store, coll string, docs []Doc, pending []int, version int64) (map[int]holding, error) {
	ids := bsoncore.NewArrayBuilder()
	for _, p := range pending {
		ids.AppendValue(docs[p].ID)
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument(model.ID,
		bsoncore.NewDocumentBuilder().AppendArray("$in", ids.Build()).Build()).Build()
	q := Query{Projection: standInProjection}
	if version != 0 {
		q = Query{} // the content, to tell its own version from a fence's
	}
	found, err := store.Find(ctx, coll, bson.Raw(filter), q)
	if err != nil {
		return nil, err
	}
	byID := map[string][]int{}
	for _, p := range pending {
		k := idKey(docs[p].ID.Type, docs[p].ID.Data)
		byID[k] = append(byID[k], p)
	}
	stored := map[int]holding{}
	for _, d := range found {
		id := d.Lookup(model.ID)
		standIn, _ := d.Lookup(model.Sealed).BooleanOK()
		for _, p := range byID[idKey(bsoncore.Type(id.Type), id.Value)] {
			switch {
			case version == 0 && standIn:
				stored[p] = heldByStandIn
			case version == 0:
				stored[p] = heldByDoc
			case markedFor(d, docs[p].Raw):
				stored[p] = heldByStandIn
			case supersedes(d, version):
				stored[p] = heldByDoc // superseded by a newer sender's
			case versionOf(d) == version && !standIn && contentHash(d) == contentHash(docs[p].Raw):
				stored[p] = heldByDoc // its own write
			}
		}
	}
	return stored, nil
}

// fence takes _id id in coll with a stand-in, {_id, sealed: true}, unless
// a document holds it already, and reports whether the document there is
// not the stand-in: a write of the record applied. Once the stand-in holds
// the _id, no insert of the record sent before can apply.
func fence(ctx context.Context, store Store, coll string, id bsoncore.Value) (stored bool, err error) {
	standIn := bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).AppendBoolean(model.Sealed, true).Build())
	if err := store.InsertMany(ctx, coll, []bson.Raw{standIn}); err != nil && errkind.Of(err) != errkind.Duplicate {
		return false, err
	}
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).Build())
	docs, err := store.Find(ctx, coll, filter, Query{Limit: 1})
	if err != nil {
		return false, err
	}
	if len(docs) == 0 {
		return false, fmt.Errorf("fencing _id %s: the stand-in is not there", id)
	}
	sealed, _ := docs[0].Lookup(model.Sealed).BooleanOK()
	return !sealed, nil
}

// idKey tells _id values apart by type and value.
func idKey(t bsoncore.Type, data []byte) string { return string(append([]byte{byte(t)}, data...)) }

// IDProjection returns a document's _id alone.
var IDProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.ID, 1).Build())

// standInProjection returns a document's _id, and whether it is a stand-in.
var standInProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.ID, 1).AppendInt32(model.Sealed, 1).Build())

// Existing counts the documents of coll whose _id is one of ids.
func Existing(ctx context.Context, store Store, coll string, ids []bsoncore.Value, retry Retry) (int, error) {
	docs := make([]Doc, len(ids))
	pending := make([]int, len(ids))
	for i, id := range ids {
		docs[i], pending[i] = Doc{ID: id}, i
	}
	stored, err := lookup(ctx, store, coll, docs, pending, 0, retry)
	return len(stored), err
}
