package layout

import (
	"hash/fnv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Rule gives the documents whose Field holds Value a retention of TTL
// instead of the collection's.
type Rule struct {
	Field string // as stored: a path in a bucket's key, or a flat document's top-level field
	// Old is where a bucket written before nested paths holds Field
	// (its dots replaced: model.Docs.OldName), read when Field is not
	// there; "" when it is Field.
	Old   string
	Value string
	TTL   time.Duration
}

// Expiry is when documents leave. The TTL index on expireAt deletes a
// document TTL after its expireAt, and expireAt is the document's time
// anchor (a bucket's window end, or its newest entry without a window; a
// flat document's time) plus a jitter fixed per document plus the offset of
// the first rule it matches (the rule's TTL minus TTL). A change of TTL is
// then one change of the index (collMod), and one index serves every rule.
type Expiry struct {
	TTL    time.Duration // 0: documents do not expire
	Jitter time.Duration // the jitter is in [0, Jitter)
	Rules  []Rule
}

// On reports whether documents expire.
func (e Expiry) On() bool { return e.TTL > 0 }

// At is the expireAt of a document with time anchor, jitter id id, whose
// fields doc holds (the bucket's key or the flat document).
func (e Expiry) At(anchor time.Time, id string, doc bsoncore.Document) time.Time {
	return anchor.Add(Jitter(id, e.Jitter) + e.Offset(doc))
}

// Offset is the rule offset of a document whose fields doc holds: the
// first matching rule's TTL minus TTL, 0 when none matches.
func (e Expiry) Offset(doc bsoncore.Document) time.Duration {
	for _, r := range e.Rules {
		v, ok := lookupPath(doc, r.Field)
		if !ok && r.Old != "" {
			v, ok = lookupPath(doc, r.Old)
		}
		if !ok {
			continue
		}
		if text, ok := parser.ScalarText(v); ok && text == r.Value {
			return r.TTL - e.TTL
		}
	}
	return 0
}

// lookupPath is the value at dotted path p in doc, through embedded
// documents.
func lookupPath(doc bsoncore.Document, p string) (bsoncore.Value, bool) {
	for {
		seg, rest, more := strings.Cut(p, ".")
		v, err := doc.LookupErr(seg)
		switch {
		case err != nil:
			return bsoncore.Value{}, false
		case !more:
			return v, true
		case v.Type != bsoncore.TypeEmbeddedDocument:
			return bsoncore.Value{}, false
		}
		doc, p = v.Document(), rest
	}
}

// Jitter is a duration in [0, max) fixed by id, so every write of one
// document, and every retry, computes the same expiry.
func Jitter(id string, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(max))
}

// Bucket is the expireAt of a bucket of group id with key fields key: its
// window end, or without a window its newest entry (maxTs), as anchor.
func (e Expiry) Bucket(id string, key bsoncore.Document, end, maxTs time.Time) time.Time {
	anchor := end
	if anchor.IsZero() {
		anchor = maxTs
	}
	return e.At(anchor, id, key)
}

// StoredBucket is the expireAt of a stored bucket (its _id, key, end and
// maxTs read), for the backfill.
func (e Expiry) StoredBucket(doc bson.Raw) (time.Time, bool) {
	id, ok := doc.Lookup(model.ID).StringValueOK()
	cut := strings.LastIndexByte(id, '-')
	maxTs, hasMax := doc.Lookup(model.MaxTs).TimeOK()
	end, _ := doc.Lookup(model.End).TimeOK()
	key, _ := doc.Lookup(model.Key).DocumentOK()
	if !ok || cut < 0 || !hasMax && end.IsZero() {
		return time.Time{}, false
	}
	return e.Bucket(id[:cut], bsoncore.Document(key), end, maxTs), true
}

// BucketProjection is what StoredBucket reads.
var BucketProjection = bson.D{{Key: model.ID, Value: 1}, {Key: model.Key, Value: 1}, {Key: model.End, Value: 1}, {Key: model.MaxTs, Value: 1}}

// Flat is the expireAt of a flat document with _id id, time t and fields
// doc. The jitter derives from the id's value bytes: for the plugin's
// ObjectIDs their 12 bytes, for a record's own id (id_key) its value, so
// every agent storing that record computes the same.
func (e Expiry) Flat(id bsoncore.Value, t time.Time, doc bsoncore.Document) time.Time {
	return e.At(t, string(id.Data), doc)
}

// StoredFlat is the expireAt of a stored flat document whose time is under
// timeKey, for the backfill.
func (e Expiry) StoredFlat(timeKey string) func(doc bson.Raw) (time.Time, bool) {
	return func(doc bson.Raw) (time.Time, bool) {
		id, err := bsoncore.Document(doc).LookupErr(model.ID)
		t, hasTime := doc.Lookup(timeKey).TimeOK()
		if err != nil || !hasTime {
			return time.Time{}, false
		}
		return e.Flat(id, t, bsoncore.Document(doc)), true
	}
}
