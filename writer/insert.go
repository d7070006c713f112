package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Doc is a document to insert with its _id.
type Doc struct {
	ID  bsoncore.Value
	Raw bson.Raw
}

// Refused is a document MongoDB will not store, with the reason.
type Refused struct {
	Index  int // into the docs given to InsertAll
	Reason string
}

// InsertAll inserts docs unordered so that each ends up stored exactly once:
// a document whose _id already exists counts as stored (an earlier attempt
// wrote it). Documents MongoDB refuses are returned, found by splitting the
// batch in halves when the server does not say which document it refuses
// (or drops the connection on the batch while answering otherwise); an
// error means the flush deadline passed with documents still unwritten.
//
// limit, when above 0, caps the documents per insert: the search for
// unstorable content goes on where an earlier attempt left it. drops holds,
// by index in docs, the connections a document inserted alone lost in a
// row in earlier attempts (an earlier Inserted.Drops).
func InsertAll(ctx context.Context, store Store, coll string, docs []Doc, retry Retry, limit int, drops map[int]int) (Inserted, error) {
	return (&inserter{store: store, coll: coll, docs: docs, retry: retry, limit: limit, drops: drops}).all(ctx)
}

// ReplaceAll is InsertAll for documents that replace the one of their _id
// (Store.Replace), at most batch to a command (an update command, which
// some servers cannot take large): the last one written wins. A document
// counts as stored already (Existed) only when the one stored under its
// _id is the same, byte for byte: those are looked up first, and not
// written. Any other is replaced, again after a failed command, which can
// only apply once.
func ReplaceAll(ctx context.Context, store Store, coll string, docs []Doc, retry Retry, limit, batch int, drops map[int]int) (Inserted, error) {
	ins := &inserter{store: store, coll: coll, docs: docs, retry: retry, limit: limit, batch: batch, drops: drops, replace: true}
	all := make([]int, len(docs))
	for i := range all {
		all[i] = i
	}
	var same map[int]bool
	if err := retry.Do(ctx, func() (err error) {
		same, err = existing(ctx, store, coll, docs, all, true)
		return err
	}); err != nil {
		return Inserted{Limit: limit}, fmt.Errorf("reading %s: %w", coll, err)
	}
	ins.existed, ins.skip = len(same), same
	return ins.all(ctx)
}

// all writes the inserter's documents but those in skip, at most limit
// (and batch) at a time.
func (ins *inserter) all(ctx context.Context) (Inserted, error) {
	docs := ins.docs
	size := len(docs)
	if ins.limit > 0 {
		size = ins.limit
	}
	if ins.batch > 0 {
		size = min(size, ins.batch)
	}
	var out Inserted
	for from := 0; from < len(docs); from += size {
		pending := make([]int, 0, size)
		for i := from; i < min(from+size, len(docs)); i++ {
			if !ins.skip[i] {
				pending = append(pending, i)
			}
		}
		if len(pending) == 0 {
			continue
		}
		more, err := ins.insert(ctx, pending)
		out.Refused = append(out.Refused, more...)
		if err != nil {
			out.Limit, out.Existed, out.Drops = ins.limit, ins.existed, ins.lost
			return out, err
		}
	}
	out.Existed = ins.existed
	return out, nil
}

// Inserted is what InsertAll did.
type Inserted struct {
	Refused []Refused
	// Limit is where the search for unstorable content stood when an
	// error ended it (0 if none).
	Limit int
	// Existed counts the documents found stored already after an insert
	// failed: stored by an earlier attempt, or by the failed insert itself.
	Existed int
	// Drops, when a document inserted alone was losing its connection as
	// an error ended InsertAll, holds its count by index in docs.
	Drops map[int]int
}

// inserter is one InsertAll; limit is the smallest split it has made.
type inserter struct {
	store   Store
	coll    string
	docs    []Doc
	retry   Retry
	limit   int
	existed int
	drops   map[int]int  // given
	lost    map[int]int  // to give back
	replace bool         // Store.Replace instead of InsertMany
	skip    map[int]bool // stored already, not to write
	batch   int          // the most documents per command; 0: no bound
}

// put sends batch as one insert or replace command.
func (ins *inserter) put(ctx context.Context, batch []bson.Raw) error {
	if ins.replace {
		return ins.store.Replace(ctx, ins.coll, batch)
	}
	return ins.store.InsertMany(ctx, ins.coll, batch)
}

func (ins *inserter) insert(ctx context.Context, pending []int) ([]Refused, error) {
	store, coll, docs, retry := ins.store, ins.coll, ins.docs, ins.retry
	var refused []Refused
	netErrs, waits := 0, 0
	if len(pending) == 1 {
		netErrs = ins.drops[pending[0]]
	}
	defer func() {
		if len(pending) == 1 && netErrs > 0 {
			ins.lost = map[int]int{pending[0]: netErrs}
		}
	}()
	for len(pending) > 0 {
		batch := make([]bson.Raw, len(pending))
		for i, p := range pending {
			batch[i] = docs[p].Raw
		}
		err := ins.put(ctx, batch)
		if err == nil {
			return refused, nil
		}
		// Sort out what happened: documents refused for their content,
		// documents already there, and the rest to try again.
		poison := poisonOf(err, pending)
		suspect, answers := ins.suspect(ctx, err, pending, &netErrs)
		stored, ferr := existing(ctx, store, coll, docs, pending, ins.replace)
		if ferr != nil {
			err, suspect, answers = ferr, false, false
		}
		next := ins.sortOut(pending, stored, poison, ins.existedBefore(err, pending), &refused)
		progress := len(next) < len(pending)
		pending = next
		switch {
		case len(pending) == 0:
			return refused, nil
		case progress:
			netErrs = 0
			continue
		case suspect || Classify(err) == Poison:
			if len(pending) == 1 {
				reason := "refused by MongoDB: " + err.Error()
				if suspect {
					reason = fmt.Sprintf("refused by MongoDB: the server closed the connection on this record alone %d times in a row, answering a command as large each time in between: %v", netErrs, err)
				}
				return append(refused, Refused{Index: pending[0], Reason: reason}), nil
			}
			return ins.split(ctx, pending, refused)
		}
		if answers {
			continue // the server answers: repeat at once
		}
		waits++
		if werr := retry.Wait(ctx, waits); werr != nil {
			return refused, fmt.Errorf("inserting into %s: %w", coll, err)
		}
	}
	return refused, nil
}

// poisonOf is, by document index, why the server refused documents of
// pending for their content in err.
func poisonOf(err error, pending []int) map[int]string {
	poison := map[int]string{}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		for _, we := range bwe.WriteErrors {
			if Classify(we) == Poison && we.Index >= 0 && we.Index < len(pending) {
				poison[pending[we.Index]] = we.Message
			}
		}
	} else if Classify(err) == Poison && len(pending) == 1 {
		poison[pending[0]] = err.Error()
	}
	return poison
}

// suspect reports whether the lost connection of err puts the content of
// pending under suspicion, counting it in netErrs, and whether the server
// answers meanwhile (a document alone is then repeated at once).
func (ins *inserter) suspect(ctx context.Context, err error, pending []int, netErrs *int) (suspect, answers bool) {
	if Classify(err) != Transient || !errkind.ConnectionLost(err) {
		return false, false
	}
	if len(pending) == 1 {
		// One document alone: suspected only on the evidence of Dropped
		// (and then only if not stored, see insert).
		suspect = Dropped(ctx, ins.store, ins.coll, len(ins.docs[pending[0]].Raw), netErrs)
		return suspect, *netErrs > 0 && ctx.Err() == nil
	}
	// Once a search is under way, the content around it is suspect from
	// the first dropped connection.
	*netErrs++
	return (*netErrs >= suspectAfter || ins.limit > 0) && ctx.Err() == nil && ins.store.Ping(ctx) == nil, false
}

// existedBefore is, when the server answered the insert of pending with
// err, the documents it named as existing already (DuplicateKey): the
// others found stored after it are this insert's. nil when it did not
// answer (a lost reply): every document found stored then counts as
// existing, the insert's own included.
func (ins *inserter) existedBefore(err error, pending []int) map[int]bool {
	var bwe mongo.BulkWriteException
	if ins.replace || !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return nil
	}
	dup := map[int]bool{}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(pending) {
			return nil // not an answer about these statements
		}
		if Classify(we) == Duplicate {
			dup[pending[we.Index]] = true
		}
	}
	return dup
}

// sortOut counts the documents of pending already stored (of those, with
// before, the ones it names), adds those refused to refused, and returns
// the rest, to try again.
func (ins *inserter) sortOut(pending []int, stored map[int]bool, poison map[int]string, before map[int]bool, refused *[]Refused) []int {
	next := pending[:0:0]
	for _, p := range pending {
		switch {
		case stored[p] && before != nil && !before[p]:
			// Written by the insert just answered.
		case stored[p]:
			ins.existed++
		case poison[p] != "":
			*refused = append(*refused, Refused{Index: p, Reason: "refused by MongoDB: " + poison[p]})
		default:
			next = append(next, p)
		}
	}
	return next
}

// split inserts pending in halves, to find the document a refusal without
// a usable index (or a suspect lost connection) is about.
func (ins *inserter) split(ctx context.Context, pending []int, refused []Refused) ([]Refused, error) {
	half := (len(pending) + 1) / 2
	if ins.limit == 0 || half < ins.limit {
		ins.limit = half
	}
	for _, part := range [][]int{pending[:half], pending[half:]} {
		more, err := ins.insert(ctx, part)
		refused = append(refused, more...)
		if err != nil {
			return refused, err
		}
	}
	return refused, nil
}

// existing reports which of the pending documents are already stored: a
// document of their _id, or with same, the same document. Ids are told
// apart by type and value, so documents that share one are all reported.
func existing(ctx context.Context, store Store, coll string, docs []Doc, pending []int, same bool) (map[int]bool, error) {
	ids := bsoncore.NewArrayBuilder()
	for _, p := range pending {
		ids.AppendValue(docs[p].ID)
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument(model.ID,
		bsoncore.NewDocumentBuilder().AppendArray("$in", ids.Build()).Build()).Build()
	q := Query{Projection: IDProjection}
	if same {
		q = Query{}
	}
	found, err := store.Find(ctx, coll, bson.Raw(filter), q)
	if err != nil {
		return nil, err
	}
	byID := map[string][]int{}
	for _, p := range pending {
		k := idKey(docs[p].ID.Type, docs[p].ID.Data)
		byID[k] = append(byID[k], p)
	}
	stored := map[int]bool{}
	for _, d := range found {
		id := d.Lookup(model.ID)
		for _, p := range byID[idKey(bsoncore.Type(id.Type), id.Value)] {
			if !same || bytes.Equal(d, docs[p].Raw) {
				stored[p] = true
			}
		}
	}
	return stored, nil
}

// idKey tells _id values apart by type and value.
func idKey(t bsoncore.Type, data []byte) string { return string(append([]byte{byte(t)}, data...)) }

// IDProjection returns a document's _id alone.
var IDProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.ID, 1).Build())

// Existing counts the documents of coll whose _id is one of ids.
func Existing(ctx context.Context, store Store, coll string, ids []bsoncore.Value, retry Retry) (int, error) {
	docs := make([]Doc, len(ids))
	pending := make([]int, len(ids))
	for i, id := range ids {
		docs[i], pending[i] = Doc{ID: id}, i
	}
	var stored map[int]bool
	err := retry.Do(ctx, func() (err error) {
		stored, err = existing(ctx, store, coll, docs, pending, false)
		return err
	})
	return len(stored), err
}
