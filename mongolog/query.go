package mongolog

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Cond is a condition on the records' fields: Field Op Value, Op one of
// = != > >= < <= ~ (a regular expression).
type Cond struct {
	Field, Op, Value string
}

func (c Cond) String() string { return c.Field + c.Op + c.Value }

var condOps = []string{">=", "<=", "!=", "=", ">", "<", "~"}

// ParseCond reads a condition such as level=error, cost>500 or path~^/api.
func ParseCond(s string) (Cond, error) {
	at, op := -1, ""
	for _, o := range condOps {
		if i := strings.Index(s, o); i > 0 && (at < 0 || i < at || i == at && len(o) > len(op)) {
			at, op = i, o
		}
	}
	if at <= 0 {
		return Cond{}, fmt.Errorf("condition %q: want field=value, field!=value, field>n, field>=n, field<n, field<=n or field~regex", s)
	}
	c := Cond{Field: strings.TrimSpace(s[:at]), Op: op, Value: strings.TrimSpace(s[at+len(op):])}
	switch op {
	case ">", ">=", "<", "<=":
		if _, err := strconv.ParseFloat(c.Value, 64); err != nil {
			return Cond{}, fmt.Errorf("condition %q: %s compares numbers, and %q is not one", s, op, c.Value)
		}
	case "~":
		if _, err := regexp.Compile(c.Value); err != nil {
			return Cond{}, fmt.Errorf("condition %q: %v", s, err)
		}
	}
	return c, nil
}

// ParseConds reads conditions, all of them or an error.
func ParseConds(args []string) ([]Cond, error) {
	var out []Cond
	for _, a := range args {
		c, err := ParseCond(a)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// operand is a condition's value as the query compares it: a number also
// matches its text, so code=500 finds 500 and "500".
func (c Cond) operand() any {
	if c.Op == "~" {
		return bson.Regex{Pattern: c.Value}
	}
	f, err := strconv.ParseFloat(c.Value, 64)
	if err != nil {
		return c.Value
	}
	switch c.Op {
	case "=", "!=":
		return bson.A{f, c.Value}
	}
	return f
}

// filter is the condition as a query filter on path.
func (c Cond) filter(path string) bson.E {
	v := c.operand()
	switch c.Op {
	case "=":
		if a, ok := v.(bson.A); ok {
			return bson.E{Key: path, Value: bson.D{{Key: "$in", Value: a}}}
		}
		return bson.E{Key: path, Value: v}
	case "!=":
		if a, ok := v.(bson.A); ok {
			return bson.E{Key: path, Value: bson.D{{Key: "$nin", Value: a}}}
		}
		return bson.E{Key: path, Value: bson.D{{Key: "$ne", Value: v}}}
	case "~":
		return bson.E{Key: path, Value: v}
	}
	op := map[string]string{">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte"}[c.Op]
	return bson.E{Key: path, Value: bson.D{{Key: op, Value: v}}}
}

// Query selects records.
type Query struct {
	Conds    []Cond
	From, To time.Time // zero: open
	Limit    int       // 0: all
}

// Reader reads what the plugin configured by Cfg stored.
type Reader struct {
	DB  *mongo.Database
	Cfg *conf.Config

	named bool // one of several targets of a Span: lines name the database
	// beforeDelete, in tests, runs between prune's read of what it
	// deletes and its delete.
	beforeDelete func()
}

// Collections are the collections holding records of [from, to), in time
// order: the partitions whose period meets the range, or the collection.
func (r *Reader) Collections(ctx context.Context, from, to time.Time) ([]string, error) {
	p := layout.Partitions{Base: r.Cfg.Collection, Period: r.Cfg.Partition}
	if r.Cfg.Partition == layout.None {
		return []string{r.Cfg.Collection}, nil
	}
	names, err := r.DB.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !p.Owns(n) || !from.IsZero() && n < p.Collection(from) || !to.IsZero() && n > p.Collection(to) {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out) // partition names sort as their periods
	return out, nil
}

// keyField is where a bucket stores the key field path, and whether path
// is one.
func (r *Reader) keyField(path string) (string, bool) {
	keys := r.Cfg.BucketKey
	if len(keys) == 0 {
		keys = []string{r.Cfg.TagKey}
	}
	if !slices.Contains(keys, path) {
		return "", false
	}
	return r.Cfg.Model().KeyPath(path), true
}

// bucketFilter selects the buckets that may hold records of q: key
// conditions and the time range pushed down to bucket fields (and the
// lookup index).
func (r *Reader) bucketFilter(q Query) bson.D {
	var f bson.D
	// With every key field given as text, the whole key is one value: the
	// lookup index {key: 1, start: 1} serves the query.
	keys := r.Cfg.BucketKey
	if len(keys) == 0 {
		keys = []string{r.Cfg.TagKey}
	}
	var whole bson.D
	for _, k := range keys {
		i := slices.IndexFunc(q.Conds, func(c Cond) bool { return c.Field == k && c.Op == "=" })
		if i < 0 {
			whole = nil
			break
		}
		if _, err := strconv.ParseFloat(q.Conds[i].Value, 64); err == nil {
			whole = nil // stored as a number or as text: not one value
			break
		}
		whole = append(whole, bson.E{Key: r.Cfg.Model().KeyName(k), Value: q.Conds[i].Value})
	}
	if whole != nil {
		f = append(f, bson.E{Key: model.Key, Value: whole})
	}
	for _, c := range q.Conds {
		if path, ok := r.keyField(c.Field); ok && (c.Op == "=" && whole == nil || c.Op == "~") {
			f = append(f, c.filter(path))
		}
	}
	f = append(f, r.Cfg.Model().BucketsIn(q.From, q.To)...)
	return mergeSame(f)
}

// mergeSame joins conditions on one field into one, as a filter document
// holds each field once.
func mergeSame(f bson.D) bson.D {
	var out bson.D
	var and bson.A
	for _, e := range f {
		i := slices.IndexFunc(out, func(o bson.E) bool { return o.Key == e.Key })
		if i < 0 {
			out = append(out, e)
			continue
		}
		a, aOK := e.Value.(bson.D)
		b, bOK := out[i].Value.(bson.D)
		if aOK && bOK && len(a) > 0 && len(b) > 0 && strings.HasPrefix(a[0].Key, "$") && strings.HasPrefix(b[0].Key, "$") &&
			!slices.ContainsFunc(b, func(o bson.E) bool { return o.Key == a[0].Key }) {
			out[i].Value = append(b, a...)
			continue
		}
		and = append(and, bson.D{e})
	}
	if len(and) > 0 {
		out = append(out, bson.E{Key: "$and", Value: and})
	}
	return out
}

// entryFilter selects the records of q, each field under prefix.
func (r *Reader) entryFilter(q Query, prefix string) bson.D {
	var f bson.D
	for _, c := range q.Conds {
		f = append(f, c.filter(prefix+c.Field))
	}
	tk := prefix + r.Cfg.TimeKey
	if !q.From.IsZero() {
		f = append(f, bson.E{Key: tk, Value: bson.D{{Key: "$gte", Value: q.From}}})
	}
	if !q.To.IsZero() {
		f = append(f, bson.E{Key: tk, Value: bson.D{{Key: "$lt", Value: q.To}}})
	}
	return mergeSame(f)
}

// Query calls emit with each record of q, in time order, collection by
// collection. Key conditions and the time range select buckets (through
// the lookup index); the server unpacks them and filters the entries.
func (r *Reader) Query(ctx context.Context, q Query, emit func(bson.Raw) error) error {
	colls, err := r.Collections(ctx, q.From, q.To)
	if err != nil {
		return fmt.Errorf("listing the collections of %s: %w", r.Cfg.Collection, err)
	}
	left := q.Limit
	for _, coll := range colls {
		var cur *mongo.Cursor
		c := r.DB.Collection(coll)
		if r.Cfg.Mode == model.ModeFlat {
			opts := options.Find().SetSort(bson.D{{Key: r.Cfg.TimeKey, Value: 1}})
			if left > 0 {
				opts.SetLimit(int64(left))
			}
			f := r.entryFilter(q, "")
			if f == nil {
				f = bson.D{}
			}
			cur, err = c.Find(ctx, f, opts)
		} else {
			cur, err = c.Aggregate(ctx, r.entryPipeline(r.bucketFilter(q), q, true, left))
		}
		if err != nil {
			return fmt.Errorf("querying %s: %w", r.Label(coll), err)
		}
		for cur.Next(ctx) {
			rec := cur.Current
			if r.Cfg.Mode != model.ModeFlat {
				rec = rec.Lookup(model.Logs).Document()
			}
			if err := emit(rec); err != nil {
				_ = cur.Close(ctx)
				return err
			}
			if left--; q.Limit > 0 && left == 0 {
				return cur.Close(ctx)
			}
		}
		if err := cur.Err(); err != nil {
			_ = cur.Close(ctx)
			return fmt.Errorf("querying %s: %w", r.Label(coll), err)
		}
		_ = cur.Close(ctx)
	}
	return nil
}

// entryPipeline unpacks the buckets match selects and keeps their entries
// that meet q's conditions and time range, sorted by time or in stored
// order, at most limit (0: all); each result holds one entry under logs.
func (r *Reader) entryPipeline(match bson.D, q Query, sorted bool, limit int) mongo.Pipeline {
	pipe := mongo.Pipeline{}
	if len(match) > 0 {
		pipe = append(pipe, bson.D{{Key: "$match", Value: match}})
	}
	pipe = append(pipe, bson.D{{Key: "$unwind", Value: "$" + model.Logs}})
	if ef := r.entryFilter(q, model.In("")); len(ef) > 0 {
		pipe = append(pipe, bson.D{{Key: "$match", Value: ef}})
	}
	if sorted {
		pipe = append(pipe, bson.D{{Key: "$sort", Value: bson.D{{Key: model.In(r.Cfg.TimeKey), Value: 1}}}})
	}
	if limit > 0 {
		pipe = append(pipe, bson.D{{Key: "$limit", Value: limit}})
	}
	return append(pipe, bson.D{{Key: "$project", Value: bson.D{{Key: model.ID, Value: 0}, {Key: model.Logs, Value: 1}}}})
}

// UnknownFields returns the fields of q's conditions that none of the
// first records of q's range holds, with the fields those records hold:
// a query that finds nothing may have a misspelt field.
func (r *Reader) UnknownFields(ctx context.Context, q Query) (unknown, seen []string, err error) {
	return unknownFields(ctx, q, r.Query)
}

// unknownFields is UnknownFields of the records query reads.
func unknownFields(ctx context.Context, q Query, query func(context.Context, Query, func(bson.Raw) error) error) (unknown, seen []string, err error) {
	fields := map[string]bool{}
	sample := Query{From: q.From, To: q.To, Limit: 50}
	var recs []bson.Raw
	err = query(ctx, sample, func(rec bson.Raw) error {
		recs = append(recs, append(bson.Raw(nil), rec...))
		elems, _ := rec.Elements()
		for _, e := range elems {
			fields[e.Key()] = true
		}
		return nil
	})
	if err != nil || len(recs) == 0 {
		return nil, nil, err
	}
	for _, c := range q.Conds {
		found := false
		for _, rec := range recs {
			if _, err := rec.LookupErr(strings.Split(c.Field, ".")...); err == nil {
				found = true
				break
			}
		}
		if !found && !slices.Contains(unknown, c.Field) {
			unknown = append(unknown, c.Field)
		}
	}
	for f := range fields {
		seen = append(seen, f)
	}
	slices.Sort(seen)
	return unknown, seen, nil
}
