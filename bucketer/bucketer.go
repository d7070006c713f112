// Package bucketer groups decoded records into buckets: one group per source
// key and time window, with the statistics each bucket keeps. It is pure:
// no I/O, and every result depends only on its inputs.
package bucketer

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bsonscan"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Config says how records are grouped.
type Config struct {
	KeyPaths []string      // record fields forming the key; empty: the tag
	TagKey   string        // key field name that holds the tag when KeyPaths is empty
	Window   time.Duration // window length, aligned to the UTC epoch; 0: none
	Stats    []string      // fields whose numbers get min, max and sum
	CountBy  []string      // fields whose values are counted
	// KeepValues are fields whose distinct values a bucket keeps.
	KeepValues []string
	// ReplaceDot and ReplaceDollar make counted values and keep_values
	// fields into field names, the same way record field names are made
	// safe. Key, stats and count_by paths are stored as the nested fields
	// they name (model.Path).
	ReplaceDot    string
	ReplaceDollar string
}

// Group is the records of one key and window, in chunk order.
type Group struct {
	// ID identifies the key and window; bucket ids are ID + "-" + sequence.
	ID         string
	Key        bsoncore.Document
	Start, End time.Time // zero when there is no window
	Records    []*parser.Record
	// Collection is where the group's buckets go, when the caller
	// partitions collections by time; empty means the writer's default.
	Collection string
}

// BucketID is the id of the bucket with sequence number seq in group id.
func BucketID(id string, seq int) string {
	return id + "-" + strconv.Itoa(seq)
}

// Group splits recs into groups, in order of first appearance.
func (c *Config) Group(tag string, recs []parser.Record) []*Group {
	return c.group(tag, len(recs), func(i int) *parser.Record { return &recs[i] })
}

// GroupRefs is Group of the records recs point to.
func (c *Config) GroupRefs(tag string, recs []*parser.Record) []*Group {
	return c.group(tag, len(recs), func(i int) *parser.Record { return recs[i] })
}

// group groups the n records rec gives, in order.
func (c *Config) group(tag string, n int, rec func(i int) *parser.Record) []*Group {
	byKey := map[string]*Group{}
	var groups []*Group
	var scratch []byte
	for i := range n {
		rec := rec(i)
		var start time.Time
		if c.Window > 0 {
			start = rec.Time.Truncate(c.Window)
		}
		scratch = c.appendKey(scratch[:0], tag, rec.Doc)
		scratch = appendInt64(scratch, start.UnixMilli())
		g := byKey[string(scratch)]
		if g == nil {
			keyLen := len(scratch) - 8
			sum := sha256.Sum256(scratch)
			g = &Group{
				ID:  hex.EncodeToString(sum[:10]),
				Key: bsoncore.Document(append([]byte(nil), scratch[:keyLen]...)),
			}
			if c.Window > 0 {
				g.Start, g.End = start, start.Add(c.Window)
			}
			byKey[string(scratch)] = g
			groups = append(groups, g)
		}
		g.Records = append(g.Records, rec)
	}
	return groups
}

func appendInt64(dst []byte, v int64) []byte {
	for i := 0; i < 8; i++ {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// appendKey appends the key document of one record: each key path's value
// (null when the record has none) at the nested fields the path names,
// in the order of the paths' first segments: kubernetes.pod_name and
// kubernetes.namespace_name are {kubernetes: {pod_name, namespace_name}}.
func (c *Config) appendKey(dst []byte, tag string, doc bsoncore.Document) []byte {
	if len(c.KeyPaths) == 0 {
		at, dst := bsoncore.ReserveLength(dst)
		dst = bsoncore.AppendStringElement(dst, c.TagKey, tag)
		dst = append(dst, 0)
		return bsoncore.UpdateLength(dst, at, int32(len(dst))-at)
	}
	return c.appendLevel(dst, "", doc, nil)
}

// KeyDoc is the key document of a group whose key paths hold the values
// value gives (a path without one holds null), as Group makes it: for the
// readers, which name a group's key from its values.
func (c *Config) KeyDoc(value func(path string) (bsoncore.Value, bool)) bsoncore.Document {
	if len(c.KeyPaths) == 0 {
		v, ok := value(c.TagKey)
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		return bsoncore.NewDocumentBuilder().AppendValue(c.TagKey, v).Build()
	}
	return c.appendLevel(nil, "", nil, value)
}

// appendLevel appends the document of the key paths below prefix ("" or
// a path's first segments and a dot), their values from doc, or with
// value set from it, without allocating.
func (c *Config) appendLevel(dst []byte, prefix string, doc bsoncore.Document, value func(string) (bsoncore.Value, bool)) []byte {
	at, dst := bsoncore.ReserveLength(dst)
	for i, p := range c.KeyPaths {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		seg, _, more := strings.Cut(p[len(prefix):], ".")
		field := p[:len(prefix)+len(seg)] // the path to this field
		if slices.ContainsFunc(c.KeyPaths[:i], func(q string) bool { return under(q, field) }) {
			continue // written with an earlier path's
		}
		name := model.SafeName(seg, c.ReplaceDot, c.ReplaceDollar)
		if more {
			dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, name)
			dst = c.appendLevel(dst, p[:len(field)+1], doc, value)
			continue
		}
		var v bsoncore.Value
		var ok bool
		if value != nil {
			v, ok = value(p)
		} else {
			v, ok = lookup(doc, p)
		}
		if ok {
			dst = bsoncore.AppendValueElement(dst, name, v)
		} else {
			dst = bsoncore.AppendNullElement(dst, name)
		}
	}
	dst = append(dst, 0)
	return bsoncore.UpdateLength(dst, at, int32(len(dst))-at)
}

// under reports whether path q is field or a path below it.
func under(q, field string) bool {
	return strings.HasPrefix(q, field) && (len(q) == len(field) || q[len(field)] == '.')
}

// KeyFields calls fn with each field of key, a group's key document: its
// stored path in the key (kubernetes.pod_name) and its value.
func (c *Config) KeyFields(key bsoncore.Document, fn func(path string, v bsoncore.Value)) {
	if len(c.KeyPaths) == 0 {
		if v, ok := bsonscan.Element(key, c.TagKey); ok {
			fn(c.TagKey, v)
		}
		return
	}
	for _, p := range c.KeyPaths {
		path := c.Path(p)
		if v, ok := lookup(key, path); ok {
			fn(path, v)
		}
	}
}

// lookup finds the value at a dotted path in doc, without allocating.
func lookup(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	for {
		seg, rest, more := strings.Cut(path, ".")
		v, ok := bsonscan.Element(doc, seg)
		switch {
		case !ok:
			return bsoncore.Value{}, false
		case !more:
			return v, true
		case v.Type != bsoncore.TypeEmbeddedDocument:
			return bsoncore.Value{}, false
		}
		doc, path = v.Data, rest
	}
}

// FieldName turns a counted value or a keep_values path into one safe
// field name, escaped as record fields are (model.SafeName).
func (c *Config) FieldName(s string) string {
	return model.SafeName(s, c.ReplaceDot, c.ReplaceDollar)
}

// Path is where a key, stats or count_by path is stored: the nested
// fields it names (model.Path).
func (c *Config) Path(p string) string {
	return model.Path(p, c.ReplaceDot, c.ReplaceDollar)
}

// Stat is the numeric summary of one field over some records.
type Stat struct {
	Field    string // stored path (Path)
	N        int    // how many numeric values were seen
	Min, Max float64
	Sum      float64
	IntSum   int64
	Float    bool // some value was a double: Sum holds the sum, else IntSum
}

// Count is the number of records with one value of a counted field.
type Count struct {
	Field string // stored path (Path)
	Value string // safe field name
	N     int
}

// Summary is what a bucket records about a set of its entries.
type Summary struct {
	Records      int
	Bytes        int // entries' encoded size as array elements
	MinTs, MaxTs time.Time
	Stats        []Stat
	Counts       []Count
	Values       []Values
}

// Values are the distinct values of a KeepValues field over some records,
// in order of first appearance.
type Values struct {
	Field string // safe field name
	Vals  []bsoncore.Value
	// Truncated: the writer left out values, its bucket holding enough.
	Truncated bool
}

// EntryBytes is the most a record takes as an element of the logs array:
// its document plus the element header (type, index as up to 6 digits, NUL).
func EntryBytes(rec *parser.Record) int {
	return len(rec.Doc) + 8
}

// Summarize computes the summary of recs.
func (c *Config) Summarize(recs []*parser.Record) Summary {
	s := Summary{Records: len(recs)}
	stats := make([]Stat, len(c.Stats))
	for i, f := range c.Stats {
		stats[i] = Stat{Field: c.Path(f), Min: math.Inf(1), Max: math.Inf(-1)}
	}
	counts := map[[2]string]int{}
	var order [][2]string
	for _, rec := range recs {
		s.Bytes += EntryBytes(rec)
		if s.MinTs.IsZero() || rec.Time.Before(s.MinTs) {
			s.MinTs = rec.Time
		}
		if rec.Time.After(s.MaxTs) {
			s.MaxTs = rec.Time
		}
		for j, f := range c.Stats {
			addStat(&stats[j], rec.Doc, f)
		}
		for _, f := range c.CountBy {
			k := [2]string{c.Path(f), c.FieldName(valueName(rec.Doc, f))}
			if _, ok := counts[k]; !ok {
				order = append(order, k)
			}
			counts[k]++
		}
	}
	for _, f := range c.KeepValues {
		vs := Values{Field: c.FieldName(f)}
		seen := map[string]bool{}
		for _, rec := range recs {
			v, ok := lookup(rec.Doc, f)
			if !ok || v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray {
				continue
			}
			k := string(v.Type) + string(v.Data)
			if !seen[k] {
				seen[k] = true
				vs.Vals = append(vs.Vals, v)
			}
		}
		if len(vs.Vals) > 0 {
			s.Values = append(s.Values, vs)
		}
	}
	for _, st := range stats {
		if st.N > 0 {
			s.Stats = append(s.Stats, st)
		}
	}
	for _, k := range order {
		s.Counts = append(s.Counts, Count{Field: k[0], Value: k[1], N: counts[k]})
	}
	return s
}

func addStat(st *Stat, doc bsoncore.Document, path string) {
	v, ok := lookup(doc, path)
	if !ok {
		return
	}
	var f float64
	switch v.Type {
	case bsoncore.TypeInt32:
		i := int64(v.Int32())
		f = float64(i)
		st.IntSum += i
	case bsoncore.TypeInt64:
		i := v.Int64()
		f = float64(i)
		st.IntSum += i
	case bsoncore.TypeDouble:
		f = v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		st.Float = true
	default:
		return
	}
	st.N++
	st.Sum += f
	st.Min = math.Min(st.Min, f)
	st.Max = math.Max(st.Max, f)
}

// valueName is the text a counted value is filed under: strings as they
// are, numbers and booleans as text, anything else (missing, null, maps) as
// its type name.
func valueName(doc bsoncore.Document, path string) string {
	v, ok := lookup(doc, path)
	if !ok {
		return "null"
	}
	s, ok := parser.ScalarText(v)
	if !ok {
		return v.Type.String()
	}
	if v.Type == bsoncore.TypeString && len(s) > 128 {
		// Cut at a character boundary.
		i := 128
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return s
}

// Fit returns how many of recs fit in room records and roomBytes bytes,
// when each record also costs extra bytes (at least 0).
func Fit(recs []*parser.Record, room, roomBytes, extra int) int {
	n := 0
	for n < len(recs) && n < room {
		roomBytes -= EntryBytes(recs[n]) + extra
		if roomBytes < 0 {
			break
		}
		n++
	}
	return n
}
