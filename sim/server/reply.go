package server

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The replies, built as the driver (go.mongodb.org/mongo-driver/v2) builds
// them from MongoDB's: what MongoStore gets back from UpdateOne, BulkWrite
// and InsertMany.

// writeError is the driver's WriteError of statement i's failure, with the
// write error document MongoDB sends as its Raw.
func writeError(i int, f *failure) mongo.WriteError {
	raw := bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i)).AppendInt32("code", int32(f.code))
	if f.code == codeDuplicateKey {
		raw.AppendDocument("keyPattern", bsoncore.NewDocumentBuilder().AppendInt32(model.ID, 1).Build()).
			AppendDocument("keyValue", bsoncore.NewDocumentBuilder().AppendValue(model.ID, f.dup).Build())
	}
	raw.AppendString("errmsg", f.msg)
	return mongo.WriteError{Index: i, Code: f.code, Message: f.msg, Raw: bson.Raw(raw.Build())}
}

// upsertsReply is what MongoStore.Upserts returns for statements with
// outcomes outs: for one, UpdateOne's error; for several, writer.Outcomes
// of the BulkWrite's result and error.
func upsertsReply(ups []writer.Upsert, outs []outcome) []error {
	if len(ups) == 1 {
		if f := outs[0].fail; f != nil {
			we := writeError(0, f)
			reply := bsoncore.NewDocumentBuilder().AppendInt32("n", 0).
				AppendArray("writeErrors", bsoncore.NewArrayBuilder().AppendDocument(bsoncore.Document(we.Raw)).Build()).
				AppendInt32("nModified", 0).AppendDouble("ok", 1).Build()
			return []error{mongo.WriteException{WriteErrors: mongo.WriteErrors{we}, Raw: bson.Raw(reply)}}
		}
		if outs[0].missed {
			return []error{errkind.Missed}
		}
		return []error{nil}
	}
	res, err := bulkResult(ups, outs)
	return writer.Outcomes(ups, res, err)
}

// bulkResult is what the driver's BulkWrite returns for an unordered
// update command of ups with outcomes outs: the counts (matched without
// the upserts), the upserted _ids by statement, and a BulkWriteException
// naming each failed statement, or nil.
func bulkResult(ups []writer.Upsert, outs []outcome) (*mongo.BulkWriteResult, error) {
	res := &mongo.BulkWriteResult{UpsertedIDs: map[int64]any{}, Acknowledged: true}
	var wes []mongo.BulkWriteError
	for i, o := range outs {
		switch {
		case o.fail != nil:
			request := mongo.NewUpdateOneModel().SetFilter(ups[i].Filter).SetUpdate(ups[i].Update).SetUpsert(ups[i].Insert)
			wes = append(wes, mongo.BulkWriteError{WriteError: writeError(i, o.fail), Request: request})
		case o.missed: // counted nowhere, as MongoDB answers it
		case o.upserted.Type != 0:
			res.UpsertedCount++
			res.UpsertedIDs[int64(i)] = decodeID(o.upserted)
		default:
			res.MatchedCount++
			if o.modified {
				res.ModifiedCount++
			}
		}
	}
	if len(wes) > 0 {
		return res, mongo.BulkWriteException{WriteErrors: wes}
	}
	return res, nil
}

// decodeID is an upserted _id as the driver decodes it from the reply.
func decodeID(id bsoncore.Value) any {
	var u struct {
		ID any `bson:"_id"`
	}
	doc := bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	if err := bson.Unmarshal(doc, &u); err != nil {
		panic(err)
	}
	return u.ID
}

// insertReply is InsertMany's error for the statements' failures: a
// BulkWriteException without requests, or nil.
func insertReply(fails []*failure) error {
	var wes []mongo.BulkWriteError
	for i, f := range fails {
		if f != nil {
			wes = append(wes, mongo.BulkWriteError{WriteError: writeError(i, f)})
		}
	}
	if len(wes) == 0 {
		return nil
	}
	return mongo.BulkWriteException{WriteErrors: wes}
}

// replaceReply is the error of MongoStore.Replace's BulkWrite of docs for
// the statements' failures: a BulkWriteException naming each failed
// replaceOne, or nil.
func replaceReply(docs []bson.Raw, fails []*failure) error {
	var wes []mongo.BulkWriteError
	for i, f := range fails {
		if f != nil {
			d := docs[i]
			request := mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: model.ID, Value: d.Lookup(model.ID)}}).
				SetReplacement(d).SetUpsert(true)
			wes = append(wes, mongo.BulkWriteError{WriteError: writeError(i, f), Request: request})
		}
	}
	if len(wes) == 0 {
		return nil
	}
	return mongo.BulkWriteException{WriteErrors: wes}
}
