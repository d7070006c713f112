package writer

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Versioned replacements (id_action replace). A replacement carries the
// version of the write sending it and applies only over a document of an
// older version, or where there is none (VersionGuard): of all the writes
// of one _id, held in the network or not, the document ends at the
// newest version sent, whatever order they land in. A write that finds a
// version as new or newer applies nothing (DuplicateKey: the upsert's
// insert collides on the _id).
//
// Before a record whose replacement may still apply is parked, its _id is
// fenced at the attempt's version (fenceVersion): a stand-in takes the _id
// when nothing holds it, else the document there is raised to the version
// (and marked raised: a newer version that is no newer content, which
// supersedes no write). No replacement of the record sent before can apply after that.
// Unless the document there is the record's own content, or a newer
// sender's, the record is then marked as parked in it (parked.h, the hash
// of its content), so that a later attempt that cannot read the dead
// letter yet does not write it again.

// withVersion is doc with its version field (first dropping one the
// record had) set to version, last.
func withVersion(doc bson.Raw, version int64) bson.Raw {
	out := make([]byte, 0, len(doc)+len(model.Version)+10)
	start, out := bsoncore.AppendDocumentStart(out)
	out = appendWithout(out, doc, model.Version)
	out = bsoncore.AppendInt64Element(out, model.Version, version)
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

// appendWithout appends the elements of doc but those named skip.
func appendWithout(out []byte, doc bson.Raw, skip ...string) []byte {
	els, err := bsoncore.Document(doc).Elements()
	if err != nil {
		return append(out, doc[4:len(doc)-1]...)
	}
	for _, el := range els {
		if !slices.Contains(skip, el.Key()) {
			out = append(out, el...)
		}
	}
	return out
}

// supersedes reports whether stored document d is a newer sender's write
// than version: its content written at a newer version, not a stand-in
// or a version a fence raised.
func supersedes(d bson.Raw, version int64) bool {
	sealed, _ := d.Lookup(model.Sealed).BooleanOK()
	raised, _ := d.Lookup(model.Raised).BooleanOK()
	return versionOf(d) > version && !sealed && !raised
}

// versionOf is the version of a stored document, 0 when it has none.
func versionOf(d bson.Raw) int64 {
	v, ok := d.Lookup(model.Version).Int64OK()
	if !ok {
		return 0
	}
	return v
}

// contentHash names a replacement's content: the document without its
// version, mark and raise.
func contentHash(doc bson.Raw) int64 {
	start, out := bsoncore.AppendDocumentStart(nil)
	out = appendWithout(out, doc, model.Version, model.Parked, model.Raised)
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	h := fnv.New64a()
	h.Write(out)
	return int64(h.Sum64())
}

// markedFor reports whether stored document d marks doc as parked.
func markedFor(d, doc bson.Raw) bool {
	h, ok := d.Lookup(model.Parked, model.ParkedHash).Int64OK()
	return ok && h == contentHash(doc)
}

// VersionGuard is the filter a replacement of doc applies under: its _id,
// and with a version, a stored version older than it or none.
func VersionGuard(doc bson.Raw) bson.D {
	filter := bson.D{{Key: model.ID, Value: doc.Lookup(model.ID)}}
	v, ok := doc.Lookup(model.Version).Int64OK()
	if !ok {
		return filter
	}
	return append(filter, bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: model.Version, Value: bson.D{{Key: "$lt", Value: v}}}},
		bson.D{{Key: model.Version, Value: bson.D{{Key: "$exists", Value: false}}}},
	}})
}

// fenceVersion fences the _id of doc, a replacement about to be parked
// whose write may still apply, at version (see the top of this file), and
// reports whether the record counts as stored: the document there holds
// its content, or a newer sender's version superseded it.
func fenceVersion(ctx context.Context, store Store, coll string, doc Doc, version int64) (stored bool, err error) {
	h := contentHash(doc.Raw)
	mark := bsoncore.NewDocumentBuilder().AppendInt64(model.ParkedHash, h).Build()
	standIn := bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, doc.ID).AppendBoolean(model.Sealed, true).
		AppendInt64(model.Version, version).AppendDocument(model.Parked, mark).Build())
	if err := store.InsertMany(ctx, coll, []bson.Raw{standIn}); err != nil && errkind.Of(err) != errkind.Duplicate {
		return false, err
	}
	older, err := bson.Marshal(VersionGuard(withVersion(bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, doc.ID).Build()), version)))
	if err != nil {
		return false, err
	}
	raise := bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendInt64(model.Version, version).AppendBoolean(model.Raised, true).Build()).Build()
	if err := store.UpdateMany(ctx, coll, older, bson.Raw(raise)); err != nil {
		return false, err
	}
	for range 2 {
		d, err := findID(ctx, store, coll, doc.ID)
		if err != nil {
			return false, err
		}
		sealed, _ := d.Lookup(model.Sealed).BooleanOK()
		switch {
		case !sealed && contentHash(d) == h:
			return true, nil // its own replacement applied
		case supersedes(d, version):
			return true, nil // a newer sender's
		case markedFor(d, doc.Raw):
			return false, nil
		}
		// Another content at this version: mark the record parked in it.
		at := bsoncore.NewDocumentBuilder().AppendValue(model.ID, doc.ID).AppendInt64(model.Version, version).Build()
		set := bsoncore.NewDocumentBuilder().AppendDocument("$set",
			bsoncore.NewDocumentBuilder().AppendDocument(model.Parked, mark).Build()).Build()
		if err := store.UpdateMany(ctx, coll, bson.Raw(at), bson.Raw(set)); err != nil {
			return false, err
		}
	}
	return false, fmt.Errorf("fencing _id %s: the mark of the record parked is not there", doc.ID)
}

// findID reads the document of id in coll.
func findID(ctx context.Context, store Store, coll string, id bsoncore.Value) (bson.Raw, error) {
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(model.ID, id).Build())
	docs, err := store.Find(ctx, coll, filter, Query{Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("fencing _id %s: nothing holds it", id)
	}
	return docs[0], nil
}
