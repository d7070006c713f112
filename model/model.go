// Package model is the stored documents: the field names of buckets, flat
// documents and dead letters, the path a bucket_key field is stored under,
// and the indexes, validators and shard keys built on them. The writer,
// retention (layout), the instance and mongolog name stored fields only
// through it, so a renamed field is a one-line change here.
package model

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The fields of a bucket.
const (
	ID     = "_id"   // <group id>-<seq>, made by the client
	Key    = "key"   // the bucket_key fields (or the tag), a document
	Seq    = "seq"   // the bucket's place among its group's buckets, from 0
	Start  = "start" // the window's start, with bucket_window
	End    = "end"   // the window's end, with bucket_window
	Count  = "count" // entries held
	Bytes  = "bytes" // the entries' size
	Logs   = "logs"  // the entries, in order
	Ops    = "ops"   // per entry, the chunk it came from (idempotent writes)
	MinTs  = "minTs" // the oldest entry's time
	MaxTs  = "maxTs" // the newest entry's time
	Stats  = "stats" // stats.<field>.{min,max,sum,n}
	Counts = "counts"
	// Values holds values.<field>: [distinct values] (keep_values), and
	// ValuesTruncated.<field> is true when they did not all fit.
	Values          = "values"
	ValuesTruncated = "valuesTruncated"
	// ExpireAt is when a document expires (the TTL index's field), in
	// buckets and flat documents alike.
	ExpireAt = "expireAt"
	// Sealed: true on a bucket no write may change any more (see
	// writer's fencing); absent on an open one. A bucket put in a
	// group's next place to fence it (an empty placeholder) holds 1
	// until the one record it was put for is recorded as parked in it.
	Sealed = "sealed"
	// Parked is, in a placeholder, the record whose writes it fenced
	// before the record was parked: {op, i, h, reason}, op the chunk's op
	// element of one entry, i the record's index in the chunk, h a hash
	// of its entry (a tag shared by chance names no record).
	Parked       = "parked"
	ParkedOp     = "op"
	ParkedIndex  = "i"
	ParkedHash   = "h"
	ParkedReason = "reason"
	// Version is, in a flat document written by id_action replace, the
	// version of the write that put it there: a replacement applies only
	// over an older version (see writer.ReplaceAll), so a late write can
	// never take a document back in time.
	Version = "_ver"
	// Raised: true on a flat document whose version a fence raised (see
	// writer.fenceVersion) rather than a write of its content; gone with
	// the next replacement.
	Raised = "raised"
)

// IsSealed reports whether a bucket's sealed field closes it to writes:
// it is there and not false.
func IsSealed(d bson.Raw) bool {
	v, err := d.LookupErr(Sealed)
	if err != nil {
		return false
	}
	b, ok := v.BooleanOK()
	return !ok || b
}

// The fields of a dead letter, beside the tag and time fields the
// configuration names.
const (
	ParkedAt  = "parkedAt" // when it was parked (the dead-letter TTL index's field)
	Reason    = "reason"
	Chunk     = "chunk"
	Format    = "format"
	Size      = "size"
	Truncated = "truncated"
	Refused   = "refused"
	Raw       = "raw"
)

// Stat is the path of one statistic (min, max, sum or n) of field.
func Stat(field, which string) string { return Stats + "." + field + "." + which }

// In is the path of field inside the entries, for $unwind pipelines: logs.<field>.
func In(field string) string { return Logs + "." + field }

// Docs is what a configuration says of its stored documents: built by
// conf.Config.Model, read by the writer's set-up, retention and mongolog.
type Docs struct {
	Flat             bool          // mode flat: one document per record
	Window           time.Duration // bucket_window; 0: buckets have no start and end
	TagKey, TimeKey  string        // tag_key, time_key
	KeyReplaceDot    string        // key_replace_dot: how a bucket_key path's dots are stored
	KeyReplaceDollar string
	Indexes          [][]IndexField // indexes, as given
	Shard            []ShardField   // shard_key
}

// IndexField is one field of a user's index: Order 1 or -1.
type IndexField struct {
	Path  string
	Order int
}

// Mode is how records are stored: the document model.
type Mode string

const (
	ModeBucket Mode = "bucket" // many records per document, grouped by key and time window
	ModeFlat   Mode = "flat"   // one document per record
)

// ShardField is one field of a shard key: "_id", "start", or a bucket_key
// field, hashed or ranged.
type ShardField struct {
	Name   string
	Hashed bool
}

// KeyPath is where a bucket_key field (a path as configured, dots and all)
// is stored in a bucket: key.<field as the decoder stores a name>.
func (d Docs) KeyPath(field string) string { return Key + "." + d.KeyName(field) }

// KeyName is the name a bucket_key path has inside the bucket's key.
func (d Docs) KeyName(field string) string {
	return SafeName(field, d.KeyReplaceDot, d.KeyReplaceDollar)
}

// LookupIndex is the index the writer finds a group's buckets by: the key,
// and the window start with bucket_window. In flat mode: tag and time.
func (d Docs) LookupIndex() bson.D {
	switch {
	case d.Flat:
		return bson.D{{Key: d.TagKey, Value: 1}, {Key: d.TimeKey, Value: 1}}
	case d.Window > 0:
		return bson.D{{Key: Key, Value: 1}, {Key: Start, Value: 1}}
	default:
		return bson.D{{Key: Key, Value: 1}}
	}
}

// UserIndexes are the index key documents of the indexes key.
func (d Docs) UserIndexes() []bson.D {
	var out []bson.D
	for _, ix := range d.Indexes {
		var keys bson.D
		for _, f := range ix {
			keys = append(keys, bson.E{Key: f.Path, Value: f.Order})
		}
		out = append(out, keys)
	}
	return out
}

// ShardKey is the shard key document of shard_key: bucket_key fields are
// stored under key.<field name>. Nil when the collection is not sharded.
func (d Docs) ShardKey() bson.D {
	if len(d.Shard) == 0 {
		return nil
	}
	var out bson.D
	for _, f := range d.Shard {
		name := f.Name
		if name != ID && name != Start {
			name = d.KeyPath(name)
		}
		var v any = 1
		if f.Hashed {
			v = "hashed"
		}
		out = append(out, bson.E{Key: name, Value: v})
	}
	return out
}

// BucketsIn is the filter of the buckets that may hold entries of [from,
// to): pushed down to the buckets' time fields, and with a window to the
// lookup index's start. A zero bound is open.
func (d Docs) BucketsIn(from, to time.Time) bson.D {
	var f bson.D
	if !from.IsZero() {
		f = append(f, bson.E{Key: MaxTs, Value: bson.D{{Key: "$gte", Value: from}}})
		if d.Window > 0 {
			f = append(f, bson.E{Key: Start, Value: bson.D{{Key: "$gt", Value: from.Add(-d.Window)}}})
		}
	}
	if !to.IsZero() {
		f = append(f, bson.E{Key: MinTs, Value: bson.D{{Key: "$lt", Value: to}}})
		if d.Window > 0 {
			f = append(f, bson.E{Key: Start, Value: bson.D{{Key: "$lt", Value: to}}})
		}
	}
	return f
}

// RuleField is where a ttl_rules field is read: a bucket's key field, or a
// flat document's top-level field.
func (d Docs) RuleField(field string) string {
	if d.Flat {
		return field
	}
	return d.KeyName(field)
}

// Validator is the validator of the configuration's collections (validate on).
func (d Docs) Validator() bson.D {
	if d.Flat {
		return FlatSchema(d.TimeKey)
	}
	return BucketSchema()
}

// BucketSchema is the validator of a bucket collection: the fields every
// bucket has, and BSON dates where TTL and range queries need them.
func BucketSchema() bson.D {
	return schema([]string{Key, Seq, Count, Logs, MinTs, MaxTs}, bson.D{
		{Key: Seq, Value: bson.D{{Key: "bsonType", Value: bson.A{"int", "long"}}}},
		{Key: Count, Value: bson.D{{Key: "bsonType", Value: bson.A{"int", "long"}}}},
		{Key: Logs, Value: bson.D{{Key: "bsonType", Value: "array"}}},
		{Key: Start, Value: date},
		{Key: End, Value: date},
		{Key: MinTs, Value: date},
		{Key: MaxTs, Value: date},
		{Key: ExpireAt, Value: date},
	})
}

// FlatSchema is the validator of a flat collection: every document has its
// time as a BSON date, and expireAt is a date.
func FlatSchema(timeKey string) bson.D {
	return schema([]string{timeKey}, bson.D{{Key: timeKey, Value: date}, {Key: ExpireAt, Value: date}})
}

var date = bson.D{{Key: "bsonType", Value: "date"}}

func schema(required []string, props bson.D) bson.D {
	return bson.D{{Key: "$jsonSchema", Value: bson.D{
		{Key: "bsonType", Value: "object"},
		{Key: "required", Value: required},
		{Key: "properties", Value: props},
	}}}
}
