// Package server is an in-memory model of a MongoDB 7 server, precise for
// exactly the commands the plugin sends (writer.Store: unordered upserts,
// finds, unordered inserts and replacements, pings; and the drops and
// deletes of retention), so that a simulator can run the real writer
// against it and put faults between the two: hold a command and apply it
// later, apply it and lose its reply.
//
// Each command applies atomically in one call, and its reply is the Go
// value the real writer.MongoStore returns with the official driver against
// MongoDB: a mongo.WriteException, a mongo.BulkWriteException with the
// failed statements' indexes and codes, or per-statement errors through
// writer.Outcomes, so that errkind and the writer see what they would see.
//
// It is the one hand-written model of MongoDB in the project, kept honest
// by a differential test (test/simdiff) that replays operation sequences
// against it and a real MongoDB-wire server. A command shape the plugin
// does not send (an unknown operator, a path through an array, ...)
// panics with "sim/server: not modelled": the model does not guess.
package server

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// Kind is the command an Op is.
type Kind uint8

const (
	// Upserts is an unordered update command of upserts (Store.Upserts).
	Upserts Kind = iota
	// Find is a find (Store.Find).
	Find
	// InsertMany is an unordered insert (Store.InsertMany).
	InsertMany
	// Replace is an unordered bulk write of replaceOne upserts by _id
	// (Store.Replace).
	Replace
	// Ping is a ping (Store.Ping).
	Ping
	// Drop drops a collection.
	Drop
	// Delete is a deleteMany by filter.
	Delete
	// UpdateMany is an updateMany (Store.UpdateMany): Ups[0] holds its
	// filter and update; it inserts nothing.
	UpdateMany
)

var kindNames = [...]string{"upserts", "find", "insertMany", "replace", "ping", "drop", "delete", "updateMany"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one command: its kind, its collection ("coll" or "db.coll", an
// opaque name), and what the kind takes: Ups (Upserts), Docs (InsertMany,
// Replace), Filter (Find, Delete), Query (Find).
type Op struct {
	Kind   Kind
	Coll   string
	Ups    []writer.Upsert
	Docs   []bson.Raw
	Filter bson.Raw
	Query  writer.Query
}

// Reply is the answer to an Op: Errs, one per statement (Upserts); Err
// (InsertMany, Replace, Find, Ping, Drop, Delete); Docs (Find); N, the
// documents deleted (Delete).
type Reply struct {
	Errs []error
	Err  error
	Docs []bson.Raw
	N    int
}

// Server is an in-memory MongoDB: collections of documents, each command
// applied atomically in one call. It is safe for concurrent use; Refuse
// and Order are called with it locked, and must not call it.
type Server struct {
	// Refuse, when set, is asked for each statement before it applies:
	// an upsert's update document, a document inserted, a replacement. A
	// code other than 0 makes the statement fail with a write error of
	// that code and msg, nothing applied (content a server refuses).
	Refuse func(coll string, stmt bson.Raw) (code int, msg string)
	// Order, when set, orders the documents of a find (before its sort,
	// which keeps the order of documents it ties): a seeded shuffle
	// stands for a server's "any order". Without it finds return
	// documents by _id.
	Order func(n int, swap func(i, j int))
	// Record keeps every Op applied, in order (see Log).
	Record bool

	mu    sync.Mutex
	colls map[string]*collection
	log   []Op
}

// collection is a collection's documents, by _id in MongoDB's order (its
// _id index: 1, NumberLong(1) and 1.0 are one key).
type collection struct{ docs []stored }

type stored struct {
	id  bsoncore.Value
	doc bsoncore.Document // never changed once stored: an update stores a new one
}

// New returns an empty server.
func New() *Server { return &Server{colls: map[string]*collection{}} }

// Apply applies op and returns its reply.
func (s *Server) Apply(op Op) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Record {
		s.log = append(s.log, op.clone())
	}
	switch op.Kind {
	case Upserts:
		return Reply{Errs: s.upserts(op.Coll, op.Ups)}
	case Find:
		return Reply{Docs: s.find(op.Coll, op.Filter, op.Query)}
	case InsertMany:
		return Reply{Err: s.insertMany(op.Coll, op.Docs)}
	case Replace:
		return Reply{Err: s.replace(op.Coll, op.Docs)}
	case Ping:
		return Reply{}
	case Drop:
		delete(s.colls, op.Coll)
		return Reply{}
	case Delete:
		return Reply{N: s.delete(op.Coll, op.Filter)}
	case UpdateMany:
		n, err := s.updateMany(op.Coll, op.Ups[0])
		return Reply{N: n, Err: err}
	}
	panic(notModelled("op kind %d", op.Kind))
}

// Docs returns the documents of coll, by _id.
func (s *Server) Docs(coll string) []bson.Raw {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.colls[coll]
	if c == nil {
		return nil
	}
	out := make([]bson.Raw, len(c.docs))
	for i, d := range c.docs {
		out[i] = bson.Raw(slices.Clone(d.doc))
	}
	return out
}

// Collections returns the names of the collections that exist, sorted. A
// collection exists from the first insert, upsert or replace sent to it
// (as MongoDB creates it before writing, even if every statement fails)
// until it is dropped.
func (s *Server) Collections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.colls))
	for name := range s.colls {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Clone returns a deep copy of s: its documents, its log, and the same
// Refuse, Order and Record.
func (s *Server) Clone() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Server{Refuse: s.Refuse, Order: s.Order, Record: s.Record, colls: make(map[string]*collection, len(s.colls)),
		log: slices.Clone(s.log)}
	for name, coll := range s.colls {
		// Stored documents are never changed in place: sharing them is a
		// deep copy.
		c.colls[name] = &collection{docs: slices.Clone(coll.docs)}
	}
	return c
}

// Log returns the Ops applied while Record was set, in order.
func (s *Server) Log() []Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// clone is a copy of op sharing no bytes with the caller's, which the
// writer reuses once a command is answered.
func (op Op) clone() Op {
	c := op
	if op.Ups != nil {
		c.Ups = make([]writer.Upsert, len(op.Ups))
		for i, u := range op.Ups {
			c.Ups[i] = writer.Upsert{Filter: cloneRaw(u.Filter), Update: cloneRaw(u.Update), Insert: u.Insert}
		}
	}
	if op.Docs != nil {
		c.Docs = make([]bson.Raw, len(op.Docs))
		for i, d := range op.Docs {
			c.Docs[i] = cloneRaw(d)
		}
	}
	c.Filter = cloneRaw(op.Filter)
	c.Query = writer.Query{Projection: cloneRaw(op.Query.Projection), Sort: cloneRaw(op.Query.Sort), Limit: op.Query.Limit}
	return c
}

func cloneRaw(r bson.Raw) bson.Raw {
	if r == nil {
		return nil
	}
	return slices.Clone(r)
}

// coll returns the collection named name, creating it with create.
func (s *Server) coll(name string, create bool) *collection {
	c := s.colls[name]
	if c == nil && create {
		if s.colls == nil {
			s.colls = map[string]*collection{}
		}
		c = &collection{}
		s.colls[name] = c
	}
	return c
}

// at returns where id is, or would be, in c's documents, and whether it is
// there.
func (c *collection) at(id bsoncore.Value) (int, bool) {
	i := sort.Search(len(c.docs), func(i int) bool { return compare(c.docs[i].id, id) >= 0 })
	return i, i < len(c.docs) && compare(c.docs[i].id, id) == 0
}

// put stores doc (whose _id is first), replacing the document of its _id.
func (c *collection) put(doc bsoncore.Document) {
	id := doc.Index(0).Value()
	i, found := c.at(id)
	if found {
		c.docs[i] = stored{id: id, doc: doc}
		return
	}
	c.docs = slices.Insert(c.docs, i, stored{id: id, doc: doc})
}

// matching returns the indexes of c's documents matching filter, by _id.
// A filter naming one _id by equality looks that one up, as the _id index
// would.
func (c *collection) matching(filter bsoncore.Document) []int {
	if filter == nil {
		panic(notModelled("a nil filter"))
	}
	if c == nil {
		return nil
	}
	if id, err := filter.LookupErr("_id"); err == nil && !isOperators(id) && id.Type != bsoncore.TypeArray && id.Type != bsoncore.TypeRegex {
		if i, ok := c.at(id); ok && matches(c.docs[i].doc, filter) {
			return []int{i}
		}
		return nil
	}
	var out []int
	for i, d := range c.docs {
		if matches(d.doc, filter) {
			out = append(out, i)
		}
	}
	return out
}

// refused asks Refuse about stmt.
func (s *Server) refused(coll string, stmt bson.Raw) *failure {
	if s.Refuse == nil {
		return nil
	}
	if code, msg := s.Refuse(coll, stmt); code != 0 {
		return &failure{code: code, msg: msg}
	}
	return nil
}

// outcome is what one update statement did.
type outcome struct {
	fail     *failure
	missed   bool // an update that may not insert matched nothing
	modified bool
	upserted bsoncore.Value // the _id inserted, when the statement inserted
}

// upserts applies ups in order, each seeing the ones before, and answers
// as MongoStore.Upserts does: one statement as UpdateOne, several as an
// unordered BulkWrite read by writer.Outcomes.
func (s *Server) upserts(coll string, ups []writer.Upsert) []error {
	if len(ups) == 0 {
		return []error{}
	}
	c := s.coll(coll, true)
	outs := make([]outcome, len(ups))
	for i, u := range ups {
		outs[i] = s.upsert(c, coll, u)
	}
	return upsertsReply(ups, outs)
}

// upsert applies one statement.
func (s *Server) upsert(c *collection, coll string, u writer.Upsert) outcome {
	if f := s.refused(coll, u.Update); f != nil {
		return outcome{fail: f}
	}
	tree, f := parseUpdate(bsoncore.Document(u.Update))
	if f != nil {
		return outcome{fail: f}
	}
	if m := c.matching(bsoncore.Document(u.Filter)); len(m) > 0 {
		old := c.docs[m[0]]
		els, f := tree.apply(elemsOf(old.doc), "", applyCtx{id: old.id})
		if f != nil {
			return outcome{fail: f}
		}
		doc := encodeElems(nil, els, false)
		if bytes.Equal(doc, old.doc) {
			return outcome{}
		}
		c.docs[m[0]].doc = doc
		return outcome{modified: true}
	}
	if !u.Insert {
		return outcome{missed: true}
	}
	els := equalities(bsoncore.Document(u.Filter))
	i := field(els, "_id")
	if i < 0 {
		panic(notModelled("an upsert filter without _id equality"))
	}
	id := els[i].val.core()
	els, f = tree.apply(els, "", applyCtx{insert: true, id: id})
	if f != nil {
		return outcome{fail: f}
	}
	if _, found := c.at(id); found {
		return outcome{fail: duplicate(coll, id)}
	}
	c.put(encodeElems(nil, idFirst(els), false))
	return outcome{upserted: id}
}

// duplicate is the DuplicateKey failure of an insert of id.
func duplicate(coll string, id bsoncore.Value) *failure {
	return &failure{code: codeDuplicateKey, dup: id,
		msg: "E11000 duplicate key error collection: " + coll + " index: _id_ dup key: { _id: " + show(id) + " }"}
}

// idOf returns the _id of a document to insert, moving it first.
func idOf(doc bson.Raw) (bsoncore.Value, bsoncore.Document) {
	d := bsoncore.Document(doc)
	id, err := d.LookupErr("_id")
	if err != nil {
		panic(notModelled("a document without _id"))
	}
	switch id.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		panic(notModelled("an _id of type %s", id.Type))
	}
	if d.Index(0).Key() == "_id" {
		return id, slices.Clone(d)
	}
	return id, encodeElems(nil, idFirst(elemsOf(d)), false)
}

// insertMany inserts docs unordered: each stored, or failing on its own.
func (s *Server) insertMany(coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	c := s.coll(coll, true)
	fails := make([]*failure, len(docs))
	for i, d := range docs {
		if fails[i] = s.refused(coll, d); fails[i] != nil {
			continue
		}
		id, doc := idOf(d)
		if _, found := c.at(id); found {
			fails[i] = duplicate(coll, id)
			continue
		}
		c.put(doc)
	}
	return insertReply(fails)
}

// replace replaces, unordered, the document of each doc's _id with doc,
// or inserts it.
func (s *Server) replace(coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	c := s.coll(coll, true)
	fails := make([]*failure, len(docs))
	for i, d := range docs {
		if fails[i] = s.refused(coll, d); fails[i] != nil {
			continue
		}
		id, doc := idOf(d)
		j, found := c.at(id)
		if found && (c.docs[j].id.Type != id.Type || !bytes.Equal(c.docs[j].id.Data, id.Data)) {
			panic(notModelled("a replacement whose _id %s differs in type from the stored one's", show(id)))
		}
		if found && !newer(doc, c.docs[j].doc) {
			// writer.VersionGuard matches nothing: the upsert's insert
			// collides on the _id.
			fails[i] = duplicate(coll, id)
			continue
		}
		c.put(doc)
	}
	return replaceReply(docs, fails)
}

// newer reports whether replacement doc applies over stored document old:
// old matches the filter the replacement is sent under
// (writer.VersionGuard).
func newer(doc, old bsoncore.Document) bool {
	guard, err := bson.Marshal(writer.VersionGuard(bson.Raw(doc)))
	if err != nil {
		panic(err)
	}
	return matches(old, guard)
}

// find returns the documents of coll matching filter, shaped by q.
func (s *Server) find(coll string, filter bson.Raw, q writer.Query) []bson.Raw {
	c := s.colls[coll]
	idx := c.matching(bsoncore.Document(filter))
	docs := make([]bsoncore.Document, len(idx))
	for i, j := range idx {
		docs[i] = c.docs[j].doc
	}
	if s.Order != nil {
		s.Order(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	}
	if q.Sort != nil {
		sortDocs(docs, bsoncore.Document(q.Sort))
	}
	if q.Limit > 0 && int64(len(docs)) > q.Limit {
		docs = docs[:q.Limit]
	}
	if len(docs) == 0 {
		return nil // as MongoStore.Find
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		out[i] = project(d, bsoncore.Document(q.Projection))
	}
	return out
}

// delete deletes the documents of coll matching filter and returns how
// many.
// updateMany applies u's update to every document its filter matches, in
// _id order, and stops at the first that fails (MongoDB's updateMany is
// not atomic either). It returns how many it changed.
func (s *Server) updateMany(coll string, u writer.Upsert) (int, error) {
	c := s.coll(coll, true)
	tree, f := parseUpdate(bsoncore.Document(u.Update))
	if f != nil {
		return 0, mongo.WriteException{WriteErrors: mongo.WriteErrors{writeError(0, f)}}
	}
	n := 0
	for _, i := range c.matching(bsoncore.Document(u.Filter)) {
		old := c.docs[i]
		els, f := tree.apply(elemsOf(old.doc), "", applyCtx{id: old.id})
		if f != nil {
			return n, mongo.WriteException{WriteErrors: mongo.WriteErrors{writeError(0, f)}}
		}
		if doc := encodeElems(nil, els, false); !bytes.Equal(doc, old.doc) {
			c.docs[i].doc = doc
			n++
		}
	}
	return n, nil
}

func (s *Server) delete(coll string, filter bson.Raw) int {
	c := s.colls[coll]
	idx := c.matching(bsoncore.Document(filter))
	for k := len(idx) - 1; k >= 0; k-- {
		c.docs = slices.Delete(c.docs, idx[k], idx[k]+1)
	}
	return len(idx)
}

// Direct is the model as a writer.Store, every command applied as sent and
// answered: the plain store of unit tests. A command under a done context
// is not sent, and fails with the context's error, as with the driver.
type Direct struct{ *Server }

var _ writer.Store = Direct{}

func (d Direct) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	if err := ctx.Err(); err != nil {
		return slices.Repeat([]error{err}, len(ups))
	}
	return d.Apply(Op{Kind: Upserts, Coll: coll, Ups: ups}).Errs
}

func (d Direct) Find(ctx context.Context, coll string, filter bson.Raw, q writer.Query) ([]bson.Raw, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.Apply(Op{Kind: Find, Coll: coll, Filter: filter, Query: q}).Docs, nil
}

func (d Direct) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.Apply(Op{Kind: InsertMany, Coll: coll, Docs: docs}).Err
}

func (d Direct) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.Apply(Op{Kind: Replace, Coll: coll, Docs: docs}).Err
}

func (d Direct) UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.Apply(Op{Kind: UpdateMany, Coll: coll, Ups: []writer.Upsert{{Filter: filter, Update: update}}}).Err
}

func (d Direct) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.Apply(Op{Kind: Ping}).Err
}
