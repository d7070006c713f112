// Package bsonscan reads elements of BSON documents in place, without
// allocating and faster than bsoncore's lookups: it sizes the common types
// itself. A malformed document reads as not holding what it lost.
package bsonscan

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Element is the value of doc's first element named key. It reads each
// element's type and name once, and its value only to skip it.
func Element(doc []byte, key string) (bsoncore.Value, bool) {
	length, _, ok := bsoncore.ReadLength(doc)
	if !ok || length < 5 || int(length) > len(doc) {
		return bsoncore.Value{}, false
	}
	rem := doc[4 : length-1]
	for len(rem) > 0 {
		t := bsoncore.Type(rem[0])
		end := bytes.IndexByte(rem[1:], 0)
		if end < 0 {
			return bsoncore.Value{}, false
		}
		name, data := rem[1:1+end], rem[2+end:]
		n := valueSize(t, data)
		if n < 0 {
			return bsoncore.Value{}, false
		}
		if string(name) == key {
			return bsoncore.Value{Type: t, Data: data[:n]}, true
		}
		rem = data[n:]
	}
	return bsoncore.Value{}, false
}

// valueSize is the size of the value of type t that data starts with, -1
// when data is too short for it or t unknown. The common types are sized
// here; the rest as bsoncore reads them.
func valueSize(t bsoncore.Type, data []byte) int {
	n := -1
	switch t {
	case bsoncore.TypeDouble, bsoncore.TypeDateTime, bsoncore.TypeInt64, bsoncore.TypeTimestamp:
		n = 8
	case bsoncore.TypeInt32:
		n = 4
	case bsoncore.TypeBoolean:
		n = 1
	case bsoncore.TypeNull:
		n = 0
	case bsoncore.TypeObjectID:
		n = 12
	case bsoncore.TypeString, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if len(data) < 4 {
			return -1
		}
		l := int(int32(binary.LittleEndian.Uint32(data)))
		if t == bsoncore.TypeString {
			l += 4
		}
		if l < 5 {
			return -1
		}
		n = l
	default:
		v, _, ok := bsoncore.ReadValue(data, t)
		if !ok {
			return -1
		}
		n = len(v.Data)
	}
	if n > len(data) {
		return -1
	}
	return n
}
