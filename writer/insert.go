package writer

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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
// wrote it). Documents MongoDB refuses are returned; an error means the
// flush deadline passed with documents still unwritten.
func InsertAll(ctx context.Context, store Store, coll string, docs []Doc, retry Retry) ([]Refused, error) {
	pending := make([]int, len(docs))
	for i := range pending {
		pending[i] = i
	}
	var refused []Refused
	for attempt := 1; len(pending) > 0; attempt++ {
		batch := make([]bson.Raw, len(pending))
		for i, p := range pending {
			batch[i] = docs[p].Raw
		}
		err := store.InsertMany(ctx, coll, batch)
		if err == nil {
			return refused, nil
		}
		// Sort out what happened: documents refused for their content,
		// documents already there, and the rest to try again.
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
		stored, ferr := existing(ctx, store, coll, docs, pending)
		if ferr != nil {
			err = ferr
		}
		next := pending[:0:0]
		for _, p := range pending {
			switch {
			case stored[p]:
			case poison[p] != "":
				refused = append(refused, Refused{Index: p, Reason: "refused by MongoDB: " + poison[p]})
			default:
				next = append(next, p)
			}
		}
		progress := len(next) < len(pending)
		pending = next
		if len(pending) == 0 {
			return refused, nil
		}
		if Classify(err) == Poison && !progress {
			// A refusal without a usable index: split to find the record.
			if len(pending) > 1 {
				more, err := splitInsert(ctx, store, coll, docs, pending, retry)
				return append(refused, more...), err
			}
			return append(refused, Refused{Index: pending[0], Reason: "refused by MongoDB: " + err.Error()}), nil
		}
		if !progress {
			if werr := retry.Wait(ctx, attempt); werr != nil {
				return refused, fmt.Errorf("inserting into %s: %w", coll, err)
			}
		}
	}
	return refused, nil
}

// splitInsert inserts the pending documents one by one.
func splitInsert(ctx context.Context, store Store, coll string, docs []Doc, pending []int, retry Retry) ([]Refused, error) {
	var refused []Refused
	for _, p := range pending {
		r, err := InsertAll(ctx, store, coll, docs[p:p+1], retry)
		if err != nil {
			return refused, err
		}
		for _, x := range r {
			refused = append(refused, Refused{Index: p, Reason: x.Reason})
		}
	}
	return refused, nil
}

// existing reports which of the pending documents are already stored.
func existing(ctx context.Context, store Store, coll string, docs []Doc, pending []int) (map[int]bool, error) {
	ids := bsoncore.NewArrayBuilder()
	for _, p := range pending {
		ids.AppendValue(docs[p].ID)
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument("_id",
		bsoncore.NewDocumentBuilder().AppendArray("$in", ids.Build()).Build()).Build()
	found, err := store.Find(ctx, coll, bson.Raw(filter), idProjection)
	if err != nil {
		return nil, err
	}
	byID := map[string]int{}
	for _, p := range pending {
		byID[string(docs[p].ID.Data)] = p
	}
	stored := map[int]bool{}
	for _, d := range found {
		if p, ok := byID[string(d.Lookup("_id").Value)]; ok {
			stored[p] = true
		}
	}
	return stored, nil
}

var idProjection = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build())
