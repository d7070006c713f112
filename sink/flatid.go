package sink

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Records that carry their own id (id_key). A flat document whose id_key
// field holds a usable value takes that value as its _id: the event's
// identity, the same for every agent, replay or import that sends it and
// for every generation of the chunk holding it. Its id is never rewritten
// by reid, and the probe for a later generation (holds) leaves it out,
// since it is stored whatever the generation. A record without the field
// keeps the plugin's id; one whose value cannot be an _id is parked.

// maxExactDouble is the largest magnitude up to which a double holds every
// integer exactly.
const maxExactDouble = 1 << 53

// RecordID is the _id a record's id_key field (named key) with value v
// gives its document, or why v cannot be one. Strings (not empty) and
// ObjectIDs are taken as they are; integers, and doubles holding an integer
// of at most 2^53, become an int32 when they fit and an int64 otherwise, as
// the decoder stores integers, so that 7, 7.0 and NumberLong(7) are one
// event (MongoDB's _id index holds them equal too).
func RecordID(key string, v bsoncore.Value) (bsoncore.Value, string) {
	switch v.Type {
	case bsoncore.TypeString:
		if s, ok := v.StringValueOK(); ok && s != "" {
			return v, ""
		}
		return bsoncore.Value{}, fmt.Sprintf("id_key %q holds an empty string, which cannot be the document's _id (every record without an id would be one event)", key)
	case bsoncore.TypeObjectID:
		return v, ""
	case bsoncore.TypeInt32:
		return v, ""
	case bsoncore.TypeInt64:
		return intID(v.Int64()), ""
	case bsoncore.TypeDouble:
		if f := v.Double(); f == math.Trunc(f) && math.Abs(f) <= maxExactDouble {
			return intID(int64(f)), ""
		}
		return bsoncore.Value{}, fmt.Sprintf("id_key %q holds the double %v, which is not an integer of at most 2^53: an _id from it must be a non-empty string, an integer or an ObjectId", key, v.Double())
	}
	return bsoncore.Value{}, fmt.Sprintf("id_key %q holds a value of type %s: an _id from it must be a non-empty string, an integer or an ObjectId", key, v.Type)
}

// intID is n as the decoder stores an integer: int32 when it fits.
func intID(n int64) bsoncore.Value {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}

// idOf is the _id a flat document takes from its id_key field: own when
// it has the field and its value can be one, why when it cannot.
func (s *Sink) idOf(doc bsoncore.Document) (id bsoncore.Value, own bool, why string) {
	if s.opt.IDKey == "" {
		return bsoncore.Value{}, false, ""
	}
	v, err := doc.LookupErr(s.opt.IDKey)
	if err != nil {
		return bsoncore.Value{}, false, "" // no such field: the plugin's id
	}
	id, why = RecordID(s.opt.IDKey, v)
	return id, why == "", why
}

// ownIDs gives the flat documents of b whose id_key field holds a usable
// value that value as their _id, in place of the plugin's.
func (s *Sink) ownIDs(b *parser.Batch) {
	if s.opt.IDKey == "" {
		return
	}
	for i := range b.Records {
		r := &b.Records[i]
		if id, own, _ := s.idOf(r.Doc); own {
			r.Doc = withID(r.Doc, id)
		}
	}
}

// withID is doc with id as its _id in place of the one it has, first, as
// MongoDB stores it: a document stored is then the same, byte for byte, as
// the one sent (see writer.ReplaceAll).
func withID(doc bsoncore.Document, id bsoncore.Value) bsoncore.Document {
	old, err := doc.LookupErr(model.ID)
	if err != nil {
		return doc
	}
	out := make([]byte, 0, len(doc)-len(old.Data)+len(id.Data))
	start, out := bsoncore.AppendDocumentStart(out)
	out = bsoncore.AppendValueElement(out, model.ID, id)
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return doc
		}
		if el.Key() != model.ID {
			out = append(out, el...)
		}
		rest = next
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}
