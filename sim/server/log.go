package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The text form of a sequence of Ops, to store recorded runs in testdata
// and replay them: one JSON object per line, its BSON values in canonical
// extended JSON (types and field order kept), e.g.
//
//	{"kind":"upserts","coll":"logs","ups":[{"filter":{"_id":"g-0","count":{"$numberInt":"0"}},"update":{...}}]}
//	{"kind":"find","coll":"logs","filter":{"_id":"g-0"},"projection":{"seq":{"$numberInt":"1"}},"limit":1}
//
// Empty lines and lines starting with # are skipped when decoding.

type opLine struct {
	Kind       string            `json:"kind"`
	Coll       string            `json:"coll,omitempty"`
	Ups        []upsertLine      `json:"ups,omitempty"`
	Docs       []json.RawMessage `json:"docs,omitempty"`
	Filter     json.RawMessage   `json:"filter,omitempty"`
	Projection json.RawMessage   `json:"projection,omitempty"`
	Sort       json.RawMessage   `json:"sort,omitempty"`
	Limit      int64             `json:"limit,omitempty"`
}

type upsertLine struct {
	Filter json.RawMessage `json:"filter"`
	Update json.RawMessage `json:"update"`
	Insert bool            `json:"insert,omitempty"`
}

// EncodeOps writes ops as text, one line each.
func EncodeOps(ops []Op) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, op := range ops {
		l, err := lineOf(op)
		if err == nil {
			err = enc.Encode(l)
		}
		if err != nil {
			return nil, fmt.Errorf("op %d (%s): %w", i, op.Kind, err)
		}
	}
	return buf.Bytes(), nil
}

func lineOf(op Op) (opLine, error) {
	if int(op.Kind) >= len(kindNames) {
		return opLine{}, fmt.Errorf("unknown kind %d", op.Kind)
	}
	l := opLine{Kind: op.Kind.String(), Coll: op.Coll, Limit: op.Query.Limit}
	var err error
	ext := func(r bson.Raw) json.RawMessage {
		if r == nil || err != nil {
			return nil
		}
		var b []byte
		b, err = bson.MarshalExtJSON(r, true, false)
		return b
	}
	for _, u := range op.Ups {
		l.Ups = append(l.Ups, upsertLine{Filter: ext(u.Filter), Update: ext(u.Update), Insert: u.Insert})
	}
	for _, d := range op.Docs {
		l.Docs = append(l.Docs, ext(d))
	}
	l.Filter, l.Projection, l.Sort = ext(op.Filter), ext(op.Query.Projection), ext(op.Query.Sort)
	return l, err
}

// DecodeOps reads ops written by EncodeOps.
func DecodeOps(text []byte) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		op, err := opOf(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

func opOf(line []byte) (Op, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var l opLine
	if err := dec.Decode(&l); err != nil {
		return Op{}, err
	}
	op := Op{Coll: l.Coll, Query: writer.Query{Limit: l.Limit}}
	kind := -1
	for k, name := range kindNames {
		if name == l.Kind {
			kind = k
		}
	}
	if kind < 0 {
		return Op{}, fmt.Errorf("unknown kind %q", l.Kind)
	}
	op.Kind = Kind(kind)
	var err error
	raw := func(m json.RawMessage) bson.Raw {
		if m == nil || err != nil {
			return nil
		}
		var r bson.Raw
		err = bson.UnmarshalExtJSON(m, true, &r)
		return r
	}
	for _, u := range l.Ups {
		op.Ups = append(op.Ups, writer.Upsert{Filter: raw(u.Filter), Update: raw(u.Update), Insert: u.Insert})
	}
	for _, d := range l.Docs {
		op.Docs = append(op.Docs, raw(d))
	}
	op.Filter, op.Query.Projection, op.Query.Sort = raw(l.Filter), raw(l.Projection), raw(l.Sort)
	return op, err
}
