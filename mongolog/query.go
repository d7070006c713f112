package mongolog

import (
	"context"
	"errors"
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
	// noEntryIndex: the server cannot unwind entries with their place in
	// the bucket (see sortedEntries).
	noEntryIndex bool
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

// keyField reports whether path is a bucket_key field (the tag key
// without any).
func (r *Reader) keyField(path string) bool {
	return slices.Contains(r.keys(), path)
}

// bucketFilter selects the buckets that may hold records of q: key
// conditions and the time range pushed down to bucket fields (and the
// lookup index).
func (r *Reader) bucketFilter(q Query) bson.D {
	var f bson.D
	// With every key field given as text, the whole key is one value: the
	// lookup index {key: 1, start: 1} serves the query.
	whole := map[string]string{}
	for _, k := range r.keys() {
		i := slices.IndexFunc(q.Conds, func(c Cond) bool { return c.Field == k && c.Op == "=" })
		if i < 0 {
			whole = nil
			break
		}
		if _, err := strconv.ParseFloat(q.Conds[i].Value, 64); err == nil {
			whole = nil // stored as a number or as text: not one value
			break
		}
		whole[k] = q.Conds[i].Value
	}
	if whole != nil {
		f = append(f, r.wholeKey(whole))
	}
	for _, c := range q.Conds {
		if r.keyField(c.Field) && (c.Op == "=" && whole == nil || c.Op == "~") {
			f = append(f, r.keyCond(c, c.Field))
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
		c := r.DB.Collection(coll)
		if r.Cfg.Mode != model.ModeFlat {
			n := 0
			err := r.sortedEntries(ctx, c, r.bucketFilter(q), q, left, func(d bson.Raw) error {
				n++
				return emit(d.Lookup(model.Logs).Document())
			})
			if err != nil {
				return fmt.Errorf("querying %s: %w", r.Label(coll), err)
			}
			if left -= n; q.Limit > 0 && left <= 0 {
				return nil
			}
			continue
		}
		opts := options.Find().SetSort(bson.D{{Key: r.Cfg.TimeKey, Value: 1}})
		if left > 0 {
			opts.SetLimit(int64(left))
		}
		f := r.entryFilter(q, "")
		if f == nil {
			f = bson.D{}
		}
		cur, err := c.Find(ctx, f, opts)
		if err != nil {
			return fmt.Errorf("querying %s: %w", r.Label(coll), err)
		}
		for cur.Next(ctx) {
			if err := emit(cur.Current); err != nil {
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

// entryIndex is where an unwound entry's place in its bucket goes
// ($unwind's includeArrayIndex): entries of equal times sort by it, so
// they come back in the order they were stored, their chunk's order. A
// sort on time alone is not stable (MongoDB's or FerretDB's).
const entryIndex = "_i"

// sortedEntries runs the entry pipeline of match and q on c (see
// entryPipeline) sorted by time, then bucket (_id), then place in the
// bucket, at most limit (0: all), and calls each with every result: _id
// and one entry under logs. A server that cannot give the entries' places
// (FerretDB v1: $unwind's includeArrayIndex is NotImplemented) is asked
// for them unsorted, each bucket's in stored order, and they are sorted
// here, stably, the same way.
func (r *Reader) sortedEntries(ctx context.Context, c *mongo.Collection, match bson.D, q Query, limit int, each func(bson.Raw) error) error {
	if !r.noEntryIndex {
		cur, err := c.Aggregate(ctx, r.entryPipeline(match, q, true, limit))
		var ce mongo.CommandError
		if errors.As(err, &ce) && ce.Code == 238 { // NotImplemented
			r.noEntryIndex = true
		} else if err != nil {
			return err
		} else {
			defer cur.Close(ctx)
			for cur.Next(ctx) {
				if err := each(cur.Current); err != nil {
					return err
				}
			}
			return cur.Err()
		}
	}
	cur, err := c.Aggregate(ctx, r.entryPipeline(match, q, false, 0))
	if err != nil {
		return err
	}
	defer cur.Close(ctx)
	type entry struct {
		d  bson.Raw
		at time.Time
		id string
	}
	var all []entry
	for cur.Next(ctx) {
		d := append(bson.Raw(nil), cur.Current...)
		at, _ := d.Lookup(model.Logs, r.Cfg.TimeKey).TimeOK()
		id, ok := d.Lookup(model.ID).StringValueOK()
		if !ok {
			id = string(d.Lookup(model.ID).Value)
		}
		all = append(all, entry{d, at, id})
	}
	if err := cur.Err(); err != nil {
		return err
	}
	slices.SortStableFunc(all, func(a, b entry) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	for _, e := range all {
		if err := each(e.d); err != nil {
			return err
		}
	}
	return nil
}

// entryPipeline unpacks the buckets match selects and keeps their entries
// that meet q's conditions and time range, sorted by time, bucket and
// place in the bucket (see entryIndex) or in stored order, at most limit
// (0: all); each result holds its bucket's _id and one entry under logs.
func (r *Reader) entryPipeline(match bson.D, q Query, sorted bool, limit int) mongo.Pipeline {
	pipe := mongo.Pipeline{}
	if len(match) > 0 {
		pipe = append(pipe, bson.D{{Key: "$match", Value: match}})
	}
	if sorted {
		pipe = append(pipe, bson.D{{Key: "$unwind", Value: bson.D{{Key: "path", Value: "$" + model.Logs}, {Key: "includeArrayIndex", Value: entryIndex}}}})
	} else {
		pipe = append(pipe, bson.D{{Key: "$unwind", Value: "$" + model.Logs}})
	}
	if ef := r.entryFilter(q, model.In("")); len(ef) > 0 {
		pipe = append(pipe, bson.D{{Key: "$match", Value: ef}})
	}
	if sorted {
		pipe = append(pipe, bson.D{{Key: "$sort", Value: bson.D{{Key: model.In(r.Cfg.TimeKey), Value: 1}, {Key: model.ID, Value: 1}, {Key: entryIndex, Value: 1}}}})
	}
	if limit > 0 {
		pipe = append(pipe, bson.D{{Key: "$limit", Value: limit}})
	}
	return append(pipe, bson.D{{Key: "$project", Value: bson.D{{Key: model.ID, Value: 1}, {Key: model.Logs, Value: 1}}}})
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
