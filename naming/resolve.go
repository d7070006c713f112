package naming

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bsonscan"
)

// Resolve is t's name for a record with this tag: each placeholder is
// replaced by its value made safe, and the whole name is then fitted to
// MongoDB's rules for t's kind. missing reports that some placeholder had
// no usable value and got t.Missing. Resolve never fails, panics or returns
// "": rec may be nil (for a TagOnly template) or even malformed, which
// reads as missing fields.
//
// Values. The tag and a tag part are used as they are, "" counting as
// missing. For a field, a string is used as is, "" counting as missing;
// int32 and int64 give their decimal text, a double its shortest text
// (strconv 'f' from 1e-6 to 1e21, else 'e'), a decimal128 its String, a
// boolean true or false; any other type (null, document, array, date...) or
// an absent field is missing. Each byte of a value (and of Missing) outside
// [A-Za-z0-9_-] becomes '_', so dots, '$', '/', NUL and each byte of a
// non-ASCII or invalid UTF-8 character do: values that differ only there
// give the same name. In a database name the value's letters are also
// lowered, since MongoDB refuses two databases whose names differ only in
// case. Literal text is kept (in a database name, a / \ . space or " that
// only Parse allows becomes '_').
//
// The whole name. A collection name starting with "system." gets a '_'
// in front. A name longer than its limit L is cut: its first L-17 bytes are
// kept (fewer, down to the start of the character, when byte L-17 is inside
// a UTF-8 character of literal text), then '_' and the first 16 hex digits
// (lower case) of the SHA-256 of the whole uncut name, '_' before "system."
// included. So the same value always gives the same name, and two long
// names that differ anywhere get different names but for a 64-bit hash
// collision. L is MaxDatabaseBytes for a database; for a collection it is
// min(MaxCollectionBytes, MaxNamespaceBytes-1-dbLen) - min(Reserve,
// MaxReserve), where Resolve takes dbLen as MaxDatabaseBytes (room for any
// database name) and Pair.Resolve the real one. Resolve keeps at most 256
// bytes of a name and hashes the rest as it goes: a value of any size
// costs time in proportion to its length and no more memory.
func (t *Template) Resolve(tag string, rec bson.Raw) (name string, missing bool) {
	return t.resolve(t.kind, tag, rec, MaxDatabaseBytes, "")
}

// Overflowed is t's name for the overflow target: every record placeholder
// is replaced by overflow ("" means DefaultOverflow), made safe as a value
// is; $TAG and $TAG[N] are resolved as by Resolve. The name is fitted as
// Resolve's is.
func (t *Template) Overflowed(tag, overflow string) string {
	if overflow == "" {
		overflow = DefaultOverflow
	}
	name, _ := t.resolve(t.kind, tag, nil, MaxDatabaseBytes, overflow)
	return name
}

// Pair is a database template and a collection template, resolved
// together so that the collection's limit counts the database name the
// record really gets. Both must be set.
type Pair struct {
	Database   *Template // resolved as a database name whatever it was parsed for
	Collection *Template // resolved as a collection name
}

// Resolve is the record's database and collection, as Template.Resolve
// gives each; missing reports a missing value in either.
func (t Pair) Resolve(tag string, rec bson.Raw) (db, coll string, missing bool) {
	db, m1 := t.Database.resolve(Database, tag, rec, 0, "")
	coll, m2 := t.Collection.resolve(Collection, tag, rec, len(db), "")
	return db, coll, m1 || m2
}

// Overflowed is the overflow target for this tag, as
// Template.Overflowed gives each name.
func (t Pair) Overflowed(tag, overflow string) (db, coll string) {
	if overflow == "" {
		overflow = DefaultOverflow
	}
	db, _ = t.Database.resolve(Database, tag, nil, 0, overflow)
	coll, _ = t.Collection.resolve(Collection, tag, nil, len(db), overflow)
	return db, coll
}

// OverflowedAll is the overflow target whose tag placeholders are
// replaced by overflow as well ("" means DefaultOverflow): $TAG and every
// $TAG[N] read as overflow.
func (t Pair) OverflowedAll(overflow string) (db, coll string) {
	if overflow == "" {
		overflow = DefaultOverflow
	}
	db, _ = t.Database.resolve(Database, tagOverflow, nil, 0, overflow)
	coll, _ = t.Collection.resolve(Collection, tagOverflow, nil, len(db), overflow)
	return db, coll
}

// tagOverflow, as the tag given to resolve, makes every tag placeholder
// read as the overflow value too. No tag holds a NUL.
const tagOverflow = "\x00"

// resolve builds the name of kind k. dbLen is the database name's length
// (collections only); a non-empty overflow replaces every record field,
// and with tag tagOverflow every tag placeholder too.
func (t *Template) resolve(k Kind, tag string, rec []byte, dbLen int, overflow string) (string, bool) {
	var stack [headBytes + 1]byte
	head, sp := stack[:0], spill{collection: k == Collection}
	lit, val := &keepAll, &safeValue
	if k == Database {
		lit, val = &dbLiteral, &safeLower
	}
	missing := false
	for i := range t.parts {
		p := &t.parts[i]
		start := sp.n
		switch p.kind {
		case literal:
			head = add(head, &sp, p.text, lit)
			continue
		case wholeTag, tagPart:
			switch {
			case tag == tagOverflow:
				head = add(head, &sp, overflow, val)
			case p.kind == wholeTag:
				head = add(head, &sp, tag, val)
			default:
				head = add(head, &sp, tagField(tag, p.index), val)
			}
		case field:
			if overflow != "" {
				head = add(head, &sp, overflow, val)
			} else {
				head = addValue(head, &sp, rec, p.path, val)
			}
		}
		if sp.n == start {
			missing = true
			head = add(head, &sp, t.missing(), val)
		}
	}
	return finish(head, &sp, t.limit(k, dbLen)), missing
}

// missing is the value that stands for a missing one.
func (t *Template) missing() string {
	if t.Missing == "" {
		return DefaultMissing
	}
	return t.Missing
}

// limit is the longest name of kind k, in bytes.
func (t *Template) limit(k Kind, dbLen int) int {
	if k == Database {
		return MaxDatabaseBytes
	}
	dbLen = min(max(dbLen, 1), MaxDatabaseBytes)
	return min(MaxCollectionBytes, MaxNamespaceBytes-1-dbLen) - min(max(t.Reserve, 0), MaxReserve)
}

// tagField is part n of tag split on '.', or "" when there is none.
func tagField(tag string, n int) string {
	for i := 0; ; i++ {
		dot := strings.IndexByte(tag, '.')
		if i == n {
			if dot < 0 {
				return tag
			}
			return tag[:dot]
		}
		if dot < 0 {
			return ""
		}
		tag = tag[dot+1:]
	}
}

// addValue adds the text of the value at path in rec through m, or
// nothing when it is missing, empty or of another type, and returns head.
func addValue(head []byte, sp *spill, rec []byte, path []string, m *[256]byte) []byte {
	v, ok := lookup(rec, path)
	if !ok {
		return head
	}
	var num [64]byte
	switch v.Type {
	case bsoncore.TypeString:
		if s, ok := stringBytes(v.Data); ok {
			return add(head, sp, s, m)
		}
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return add(head, sp, strconv.AppendInt(num[:0], int64(i), 10), m)
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return add(head, sp, strconv.AppendInt(num[:0], i, 10), m)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return add(head, sp, appendFloat(num[:0], f), m)
	case bsoncore.TypeDecimal128:
		h, l, _ := v.Decimal128OK()
		return add(head, sp, bson.NewDecimal128(h, l).String(), m)
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return add(head, sp, strconv.AppendBool(num[:0], b), m)
	}
	return head
}

// appendFloat appends f's shortest text, in 'f' form from 1e-6 to 1e21 and
// 'e' form outside, as JavaScript and encoding/json write numbers.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(dst, f, 'e', -1, 64)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// stringBytes is the text of a BSON string value, without copying it.
func stringBytes(data []byte) ([]byte, bool) {
	if len(data) < 5 {
		return nil, false
	}
	n := int(int32(binary.LittleEndian.Uint32(data)))
	if n < 1 || n > len(data)-4 {
		return nil, false
	}
	return data[4 : 4+n-1], true
}

// lookup finds the value at path in the document doc: each key but the
// last must name an embedded document or an array. A malformed document
// reads as not holding the path.
func lookup(doc []byte, path []string) (bsoncore.Value, bool) {
	for i, key := range path {
		v, ok := bsonscan.Element(doc, key)
		if !ok {
			return bsoncore.Value{}, false
		}
		if i == len(path)-1 {
			return v, true
		}
		if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
			return bsoncore.Value{}, false
		}
		doc = v.Data
	}
	return bsoncore.Value{}, false
}

// AppendKey appends to dst what t's names depend on in rec besides the
// tag: the type and bytes of each field placeholder's value (a marker when
// absent). Two records of one tag with equal keys resolve to equal names,
// so a caller may resolve once per key. It allocates nothing.
func (t Pair) AppendKey(dst []byte, rec bson.Raw) []byte {
	for _, tm := range []*Template{t.Database, t.Collection} {
		for i := range tm.parts {
			p := &tm.parts[i]
			if p.kind != field {
				continue
			}
			v, ok := lookup(rec, p.path)
			if !ok {
				dst = append(dst, 0)
				continue
			}
			dst = append(dst, byte(v.Type))
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v.Data)))
			dst = append(dst, v.Data...)
		}
	}
	return dst
}
