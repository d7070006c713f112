package server

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Update documents: $set, $setOnInsert, $inc, $min, $max, $push and
// $addToSet (each with or without $each) on top-level or dotted paths, as
// MongoDB 5.0+ applies them. The paths of all operators form one tree,
// applied field by field in MongoDB's order of field names (lexicographic,
// numeric names by number), whatever the operators' order: a field the
// update creates is appended to its document in that order. An upsert's
// new document starts from the filter's equality conditions, in the order
// of their paths, and its _id is moved first.

// MongoDB's error codes of the failures modelled.
const (
	codeBadValue         = 2
	codeTypeMismatch     = 14
	codePathNotViable    = 28
	codeConflictingPaths = 40
	codeEmptyFieldName   = 56
	codeDuplicateKey     = 11000
)

// failure is a statement's write error.
type failure struct {
	code int
	msg  string
	dup  bsoncore.Value // the _id a DuplicateKey failure is about
}

func fail(code int, format string, args ...any) *failure {
	return &failure{code: code, msg: fmt.Sprintf(format, args...)}
}

// opNode is a node of an update's tree of paths: a leaf holds an operator
// and its argument, an inner node the fields below it.
type opNode struct {
	op   string
	arg  bsoncore.Value
	kids map[string]*opNode
}

var updateOperators = map[string]bool{"$set": true, "$setOnInsert": true, "$inc": true,
	"$min": true, "$max": true, "$push": true, "$addToSet": true}

// parseUpdate builds the tree of update document u, or the failure MongoDB
// answers a malformed one with.
func parseUpdate(u bsoncore.Document) (*opNode, *failure) {
	ops, err := u.Elements()
	if err != nil {
		panic(err)
	}
	if len(ops) == 0 || !strings.HasPrefix(ops[0].Key(), "$") {
		panic(notModelled("a replacement-style update"))
	}
	root := &opNode{kids: map[string]*opNode{}}
	for _, o := range ops {
		op := o.Key()
		args, ok := o.Value().DocumentOK()
		if !updateOperators[op] || !ok {
			panic(notModelled("update operator %s with a %s", op, o.Value().Type))
		}
		fields, err := args.Elements()
		if err != nil {
			panic(err)
		}
		for _, f := range fields {
			path := f.Key()
			parts := strings.Split(path, ".")
			for _, p := range parts {
				if p == "" {
					return nil, fail(codeEmptyFieldName, "The update path '%s' contains an empty field name, which is not allowed.", path)
				}
				if p[0] == '$' {
					panic(notModelled("update path %s", path))
				}
			}
			if parts[0] == "_id" {
				panic(notModelled("an update of _id"))
			}
			if f := checkArg(op, path, f.Value()); f != nil {
				return nil, f
			}
			if f := root.add(parts, op, f.Value()); f != nil {
				return nil, f
			}
		}
	}
	return root, nil
}

// checkArg checks the argument of one operator's path.
func checkArg(op, path string, arg bsoncore.Value) *failure {
	switch op {
	case "$inc":
		switch arg.Type {
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		case bsoncore.TypeDecimal128:
			panic(notModelled("$inc of a decimal"))
		default:
			return fail(codeTypeMismatch, "Cannot increment with non-numeric argument: {%s: %s}", path, show(arg))
		}
	case "$push", "$addToSet":
		if !isOperators(arg) {
			return nil
		}
		mods, _ := arg.Document().Elements()
		if len(mods) != 1 || mods[0].Key() != "$each" {
			panic(notModelled("%s modifiers other than $each alone", op))
		}
		if each := mods[0].Value(); each.Type != bsoncore.TypeArray {
			return fail(codeBadValue, "The argument to $each in %s must be an array but it was of type: %s", op, typeName(each.Type))
		}
	}
	return nil
}

// add adds the path of one operator to the tree; a path that is another's
// or runs through it conflicts.
func (n *opNode) add(parts []string, op string, arg bsoncore.Value) *failure {
	node := n
	for i, p := range parts {
		kid := node.kids[p]
		last := i == len(parts)-1
		switch {
		case kid != nil && (kid.op != "" || last):
			return fail(codeConflictingPaths, "Updating the path '%s' would create a conflict at '%s'",
				strings.Join(parts, "."), strings.Join(parts[:i+1], "."))
		case kid == nil && last:
			node.kids[p] = &opNode{op: op, arg: arg}
		case kid == nil:
			kid = &opNode{kids: map[string]*opNode{}}
			node.kids[p] = kid
		}
		node = kid
	}
	return nil
}

// active reports whether the subtree of n does anything: $setOnInsert
// does nothing but on insert.
func (n *opNode) active(insert bool) bool {
	if n.op != "" {
		return insert || n.op != "$setOnInsert"
	}
	for _, k := range n.kids {
		if k.active(insert) {
			return true
		}
	}
	return false
}

// applyCtx is what an update's failures name: whether it inserts, and the
// document's _id.
type applyCtx struct {
	insert bool
	id     bsoncore.Value
}

// apply applies the fields below n to the elements of a document (at
// path, "" for the document itself) and returns them.
func (n *opNode) apply(els []elem, path string, c applyCtx) ([]elem, *failure) {
	names := make([]string, 0, len(n.kids))
	for k := range n.kids {
		names = append(names, k)
	}
	slices.SortFunc(names, compareFieldNames)
	for _, name := range names {
		kid := n.kids[name]
		if !kid.active(c.insert) {
			continue
		}
		full := name
		if path != "" {
			full = path + "." + name
		}
		i := field(els, name)
		switch {
		case kid.op == "" && i < 0:
			sub, f := kid.apply(nil, full, c)
			if f != nil {
				return nil, f
			}
			els = append(els, elem{key: name, val: value{t: bsoncore.TypeEmbeddedDocument, elems: sub}})
		case kid.op == "":
			cur := els[i].val
			if cur.t != bsoncore.TypeEmbeddedDocument {
				return nil, notViable(kid, els[i])
			}
			sub, f := kid.apply(cur.elems, full, c)
			if f != nil {
				return nil, f
			}
			els[i].val.elems = sub
		case i < 0:
			els = append(els, elem{key: name, val: kid.create()})
		default:
			v, f := kid.modify(els[i].val, full, c)
			if f != nil {
				return nil, f
			}
			els[i].val = v
		}
	}
	return els, nil
}

// notViable is the failure of creating the fields below n inside e, which
// is not a document: MongoDB names the first field it would create.
func notViable(n *opNode, e elem) *failure {
	first := ""
	for k := range n.kids {
		if first == "" || compareFieldNames(k, first) < 0 {
			first = k
		}
	}
	if e.val.t == bsoncore.TypeArray && isNumber(first) {
		panic(notModelled("an update path through an array"))
	}
	return fail(codePathNotViable, "Cannot create field '%s' in element {%s: %s}", first, e.key, show(e.val.core()))
}

// each is the values $push or $addToSet add.
func (n *opNode) each() []bsoncore.Value {
	if !isOperators(n.arg) {
		return []bsoncore.Value{n.arg}
	}
	vals, err := n.arg.Document().Index(0).Value().Array().Values()
	if err != nil {
		panic(err)
	}
	return vals
}

// create is the value leaf n gives a field that does not exist.
func (n *opNode) create() value {
	switch n.op {
	case "$push", "$addToSet":
		v := value{t: bsoncore.TypeArray, elems: []elem{}}
		return n.addTo(v)
	}
	return treeOf(n.arg)
}

// addTo appends the values of $push or $addToSet to array v.
func (n *opNode) addTo(v value) value {
	for _, x := range n.each() {
		if n.op == "$addToSet" && slices.ContainsFunc(v.elems, func(e elem) bool { return equal(e.val.core(), x) }) {
			continue
		}
		v.elems = append(v.elems, elem{val: treeOf(x)})
	}
	return v
}

// modify is the value leaf n gives the field at path holding cur.
func (n *opNode) modify(cur value, path string, c applyCtx) (value, *failure) {
	switch n.op {
	case "$set", "$setOnInsert":
		return treeOf(n.arg), nil
	case "$min", "$max":
		d := compare(n.arg, cur.core())
		if n.op == "$min" && d < 0 || n.op == "$max" && d > 0 {
			return treeOf(n.arg), nil
		}
		return cur, nil
	case "$push":
		if cur.t != bsoncore.TypeArray {
			return value{}, fail(codeBadValue, "The field '%s' must be an array but is of type %s in document {_id: %s}", path, typeName(cur.t), show(c.id))
		}
		return n.addTo(cur), nil
	case "$addToSet":
		if cur.t != bsoncore.TypeArray {
			return value{}, fail(codeBadValue, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", path, typeName(cur.t))
		}
		return n.addTo(cur), nil
	}
	// $inc
	switch cur.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
	case bsoncore.TypeDecimal128:
		panic(notModelled("$inc of a decimal"))
	default:
		return value{}, fail(codeTypeMismatch, "Cannot apply $inc to a value of non-numeric type. {_id: %s} has the field '%s' of non-numeric type %s",
			show(c.id), path, typeName(cur.t))
	}
	sum, ok := add(cur.core(), n.arg)
	if !ok {
		return value{}, fail(codeBadValue, "Failed to apply $inc operations to current value (%s) for document {_id: %s}", show(cur.core()), show(c.id))
	}
	return sum, nil
}

// add is a + b with MongoDB's promotion rules: a double makes a double;
// two int32 make an int32, or an int64 when it overflows; any int64 makes
// an int64, and an int64 overflow is not a number (false).
func add(a, b bsoncore.Value) (value, bool) {
	switch {
	case a.Type == bsoncore.TypeDouble || b.Type == bsoncore.TypeDouble:
		return scalar(bsoncore.TypeDouble, bsoncore.AppendDouble(nil, a.AsFloat64()+b.AsFloat64())), true
	case a.Type == bsoncore.TypeInt32 && b.Type == bsoncore.TypeInt32:
		s := int64(a.Int32()) + int64(b.Int32())
		if s >= math.MinInt32 && s <= math.MaxInt32 {
			return scalar(bsoncore.TypeInt32, bsoncore.AppendInt32(nil, int32(s))), true
		}
		return scalar(bsoncore.TypeInt64, bsoncore.AppendInt64(nil, s)), true
	}
	x, y := a.AsInt64(), b.AsInt64()
	s := x + y
	if x > 0 && y > 0 && s < 0 || x < 0 && y < 0 && s >= 0 {
		return value{}, false
	}
	return scalar(bsoncore.TypeInt64, bsoncore.AppendInt64(nil, s)), true
}

func scalar(t bsoncore.Type, data []byte) value { return value{t: t, data: data} }

// compareFieldNames is MongoDB's order of the fields an update applies
// (pathsupport::cmpPathsAndArrayIndexes): names that are numbers without
// leading zeros by number (shorter first), any other by bytes.
func compareFieldNames(a, b string) int {
	digitsFirst := func(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' && (s[0] != '0' || len(s) == 1) }
	if !digitsFirst(a) || !digitsFirst(b) {
		return strings.Compare(a, b)
	}
	if len(a) != len(b) {
		return sign(len(a) - len(b))
	}
	return strings.Compare(a, b)
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// equalities are the elements an upsert's new document starts from: the
// filter's equality conditions (top-level, $eq, inside $and), dotted paths
// made into embedded documents, in the order of their paths' bytes.
func equalities(filter bsoncore.Document) []elem {
	type cond struct {
		path string
		v    bsoncore.Value
	}
	var conds []cond
	var walk func(f bsoncore.Document)
	walk = func(f bsoncore.Document) {
		els, err := f.Elements()
		if err != nil {
			panic(err)
		}
		for _, e := range els {
			k, v := e.Key(), e.Value()
			switch {
			case k == "$and":
				clauses, _ := v.Array().Values()
				for _, c := range clauses {
					walk(c.Document())
				}
			case strings.HasPrefix(k, "$"):
			case !isOperators(v):
				conds = append(conds, cond{k, v})
			default:
				if eq, err := v.Document().LookupErr("$eq"); err == nil {
					conds = append(conds, cond{k, eq})
				}
			}
		}
	}
	walk(filter)
	slices.SortStableFunc(conds, func(a, b cond) int { return strings.Compare(a.path, b.path) })
	var out []elem
	for i, c := range conds {
		for _, p := range conds[:i] {
			if c.path == p.path || strings.HasPrefix(c.path, p.path+".") {
				panic(notModelled("an upsert filter with equalities on %s and %s", p.path, c.path))
			}
		}
		out = setPath(out, strings.Split(c.path, "."), treeOf(c.v))
	}
	return out
}

// setPath sets the value at path in a document's elements, creating the
// documents on the way.
func setPath(els []elem, path []string, v value) []elem {
	i := field(els, path[0])
	if len(path) == 1 {
		if i >= 0 {
			els[i].val = v
			return els
		}
		return append(els, elem{key: path[0], val: v})
	}
	if i < 0 {
		return append(els, elem{key: path[0], val: value{t: bsoncore.TypeEmbeddedDocument, elems: setPath(nil, path[1:], v)}})
	}
	if els[i].val.t != bsoncore.TypeEmbeddedDocument {
		panic(notModelled("an upsert filter path through a %s", els[i].val.t))
	}
	els[i].val.elems = setPath(els[i].val.elems, path[1:], v)
	return els
}

// show is v as MongoDB's messages print it, near enough: relaxed
// extended JSON.
func show(v bsoncore.Value) string {
	if v.Type == 0 {
		return "null"
	}
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}}}, false, false)
	if err != nil {
		return v.String()
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(b), `{"v":`), "}")
}

// typeName is the name MongoDB gives a BSON type in its messages.
func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeBinary:
		return "binData"
	case bsoncore.TypeObjectID:
		return "objectId"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeDateTime:
		return "date"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDecimal128:
		return "decimal"
	}
	return t.String()
}
