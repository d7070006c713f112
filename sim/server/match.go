package server

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Query filters: implicit and explicit equality, $ne, $gt, $gte, $lt,
// $lte, $in, $nin, $exists on top-level or dotted paths through documents,
// and $or, $and, $nor. A condition on a path that ends at an array holds
// when it holds for the array or for any of its elements, as in MongoDB.

// item is one value a path reaches in a document, or its absence.
type item struct {
	v       bsoncore.Value
	missing bool
}

// reach is the values path (split at its dots) reaches in d: the value at
// its end and, when that is an array, each element.
func reach(d bsoncore.Document, path []string) []item {
	v, err := d.LookupErr(path[0])
	if err != nil {
		return []item{{missing: true}}
	}
	if len(path) > 1 {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			return reach(v.Document(), path[1:])
		case bsoncore.TypeArray:
			panic(notModelled("a filter path through an array (%s)", strings.Join(path, ".")))
		}
		return []item{{missing: true}}
	}
	out := []item{{v: v}}
	if v.Type == bsoncore.TypeArray {
		vals, err := v.Array().Values()
		if err != nil {
			panic(err)
		}
		for _, e := range vals {
			out = append(out, item{v: e})
		}
	}
	return out
}

// matches reports whether document d matches filter.
func matches(d, filter bsoncore.Document) bool {
	els, err := filter.Elements()
	if err != nil {
		panic(err)
	}
	for _, e := range els {
		if !matchElement(d, e.Key(), e.Value()) {
			return false
		}
	}
	return true
}

func matchElement(d bsoncore.Document, key string, cond bsoncore.Value) bool {
	switch key {
	case "$or", "$and", "$nor":
		clauses, err := cond.Array().Values()
		if err != nil || len(clauses) == 0 {
			panic(notModelled("%s without clauses", key))
		}
		n := 0
		for _, c := range clauses {
			if matches(d, c.Document()) {
				n++
			}
		}
		switch key {
		case "$or":
			return n > 0
		case "$and":
			return n == len(clauses)
		}
		return n == 0
	}
	if strings.HasPrefix(key, "$") {
		panic(notModelled("query operator %s", key))
	}
	items := reach(d, strings.Split(key, "."))
	if !isOperators(cond) {
		return eq(items, cond)
	}
	ops, _ := cond.Document().Elements()
	for _, op := range ops {
		if !matchOperator(items, op.Key(), op.Value()) {
			return false
		}
	}
	return true
}

// isOperators reports whether a condition is a document of operators
// ({$gt: 1}) rather than a document to be equal to.
func isOperators(cond bsoncore.Value) bool {
	if cond.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	els, err := cond.Document().Elements()
	return err == nil && len(els) > 0 && strings.HasPrefix(els[0].Key(), "$")
}

func matchOperator(items []item, op string, arg bsoncore.Value) bool {
	switch op {
	case "$eq":
		return eq(items, arg)
	case "$ne":
		return !eq(items, arg)
	case "$in":
		return in(items, arg)
	case "$nin":
		return !in(items, arg)
	case "$exists":
		want := truthy(arg)
		for _, it := range items {
			if !it.missing {
				return want
			}
		}
		return !want
	case "$gt", "$gte", "$lt", "$lte":
		return ranged(items, op, arg)
	}
	panic(notModelled("query operator %s", op))
}

// eq reports whether any item equals v; null also matches a missing field.
func eq(items []item, v bsoncore.Value) bool {
	if v.Type == bsoncore.TypeRegex {
		panic(notModelled("a regular expression in a filter"))
	}
	for _, it := range items {
		if it.missing && v.Type == bsoncore.TypeNull || !it.missing && equal(it.v, v) {
			return true
		}
	}
	return false
}

func in(items []item, list bsoncore.Value) bool {
	vals, err := list.Array().Values()
	if err != nil {
		panic(err)
	}
	for _, v := range vals {
		if eq(items, v) {
			return true
		}
	}
	return false
}

// ranged is $gt, $gte, $lt or $lte: only values of the argument's
// canonical type compare (type bracketing); $gte and $lte null are
// equality with null.
func ranged(items []item, op string, arg bsoncore.Value) bool {
	switch arg.Type {
	case bsoncore.TypeNull:
		return (op == "$gte" || op == "$lte") && eq(items, arg)
	case bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeRegex:
		panic(notModelled("%s with a %s", op, arg.Type))
	}
	for _, it := range items {
		if it.missing || canonical(it.v.Type) != canonical(arg.Type) {
			continue
		}
		c := compare(it.v, arg)
		if op == "$gt" && c > 0 || op == "$gte" && c >= 0 || op == "$lt" && c < 0 || op == "$lte" && c <= 0 {
			return true
		}
	}
	return false
}

// truthy is a boolean argument as MongoDB reads one: false, 0 and null
// are false.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return v.AsFloat64() != 0
	case bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	}
	return true
}
