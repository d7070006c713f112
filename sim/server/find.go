package server

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The shape of a find's answer: its sort, and its projection of top-level
// fields.

// sortKey is one field of a sort: its path and direction.
type sortKey struct {
	path []string
	desc bool
}

// sortDocs sorts docs by spec ({field: 1 or -1, ...}), stably: documents
// the sort ties keep their order.
func sortDocs(docs []bsoncore.Document, spec bsoncore.Document) {
	els, err := spec.Elements()
	if err != nil {
		panic(err)
	}
	keys := make([]sortKey, len(els))
	for i, e := range els {
		var dir float64
		switch v := e.Value(); v.Type {
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
			dir = v.AsFloat64()
		}
		if dir != 1 && dir != -1 {
			panic(notModelled("sort %s: %s", e.Key(), e.Value()))
		}
		keys[i] = sortKey{path: strings.Split(e.Key(), "."), desc: dir < 0}
	}
	slices.SortStableFunc(docs, func(a, b bsoncore.Document) int {
		for _, k := range keys {
			c := compare(sortValue(a, k), sortValue(b, k))
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

// sortValue is what a document sorts by on key k: a missing field sorts
// as null; an array by its smallest element ascending, its largest
// descending, and an empty one below null.
func sortValue(d bsoncore.Document, k sortKey) bsoncore.Value {
	its := reach(d, k.path)
	if its[0].missing {
		return bsoncore.Value{Type: bsoncore.TypeNull}
	}
	if its[0].v.Type != bsoncore.TypeArray {
		return its[0].v
	}
	if len(its) == 1 {
		return bsoncore.Value{Type: bsoncore.TypeUndefined}
	}
	best := its[1].v
	for _, it := range its[2:] {
		if c := compare(it.v, best); k.desc && c > 0 || !k.desc && c < 0 {
			best = it.v
		}
	}
	return best
}

// project returns a copy of d shaped by projection: with an inclusion
// ({a: 1}), _id (unless {_id: 0}) and the fields named, in the document's
// order; with an exclusion ({a: 0}), the other fields. A nil projection
// returns the whole document.
func project(d bsoncore.Document, projection bsoncore.Document) bson.Raw {
	if projection == nil {
		return bson.Raw(slices.Clone(d))
	}
	els, err := projection.Elements()
	if err != nil {
		panic(err)
	}
	incl, excl := map[string]bool{}, map[string]bool{}
	for _, e := range els {
		k, v := e.Key(), e.Value()
		if strings.ContainsAny(k, ".$") || v.Type == bsoncore.TypeEmbeddedDocument {
			panic(notModelled("projection %s: %s", k, v))
		}
		if truthy(v) {
			incl[k] = true
		} else {
			excl[k] = true
		}
	}
	include := len(incl) > 0 && !(len(incl) == 1 && incl["_id"] && len(excl) > 0)
	switch {
	case include && len(excl) > 1, include && len(excl) == 1 && !excl["_id"]:
		panic(notModelled("a projection that both includes and excludes fields"))
	}
	fields, err := d.Elements()
	if err != nil {
		panic(err)
	}
	at, out := bsoncore.ReserveLength(nil)
	for _, f := range fields {
		k := f.Key()
		keep := !excl[k]
		if include {
			keep = incl[k] || k == "_id" && !excl["_id"]
		}
		if keep {
			out = append(out, f...)
		}
	}
	out = append(out, 0)
	return bson.Raw(bsoncore.UpdateLength(out, at, int32(len(out))-at))
}
