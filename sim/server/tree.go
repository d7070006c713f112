package server

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A document being built or updated is held as a tree: stored documents
// are immutable bytes, and an update or an upsert works on a tree made
// from them and encodes it again.

// value is one BSON value: a scalar as its bytes, a document or an array
// as its elements (an array's keys are renumbered when it is encoded).
type value struct {
	t     bsoncore.Type
	data  []byte // a scalar's bytes
	elems []elem // a document's or an array's elements
}

type elem struct {
	key string
	val value
}

func (v value) container() bool {
	return v.t == bsoncore.TypeEmbeddedDocument || v.t == bsoncore.TypeArray
}

// treeOf is the tree of v, sharing no bytes with it.
func treeOf(v bsoncore.Value) value {
	if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
		return value{t: v.Type, data: append([]byte(nil), v.Data...)}
	}
	return value{t: v.Type, elems: elemsOf(v.Data)}
}

// elemsOf is the elements of document (or array) d as trees.
func elemsOf(d bsoncore.Document) []elem {
	els, err := d.Elements()
	if err != nil {
		panic(err)
	}
	out := make([]elem, len(els))
	for i, e := range els {
		out[i] = elem{key: e.Key(), val: treeOf(e.Value())}
	}
	return out
}

// core encodes v.
func (v value) core() bsoncore.Value {
	if !v.container() {
		return bsoncore.Value{Type: v.t, Data: v.data}
	}
	return bsoncore.Value{Type: v.t, Data: encodeElems(nil, v.elems, v.t == bsoncore.TypeArray)}
}

// encodeElems appends the document (or, with array, the array) of els to
// dst.
func encodeElems(dst []byte, els []elem, array bool) []byte {
	at, dst := bsoncore.ReserveLength(dst)
	for i, e := range els {
		key := e.key
		if array {
			key = strconv.Itoa(i)
		}
		dst = bsoncore.AppendHeader(dst, e.val.t, key)
		if e.val.container() {
			dst = encodeElems(dst, e.val.elems, e.val.t == bsoncore.TypeArray)
		} else {
			dst = append(dst, e.val.data...)
		}
	}
	dst = append(dst, 0)
	return bsoncore.UpdateLength(dst, at, int32(len(dst))-at)
}

// field returns the index of the element named key in els, or -1.
func field(els []elem, key string) int {
	for i, e := range els {
		if e.key == key {
			return i
		}
	}
	return -1
}

// idFirst moves the _id element of els to the front, as MongoDB stores
// every document.
func idFirst(els []elem) []elem {
	i := field(els, "_id")
	if i <= 0 {
		return els
	}
	id := els[i]
	copy(els[1:i+1], els[:i])
	els[0] = id
	return els
}
