package writer

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
)

func upsertsOf(ids ...string) []Upsert {
	out := make([]Upsert, len(ids))
	for i, id := range ids {
		out[i] = Upsert{Filter: bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", id).Build())}
	}
	return out
}

func dupAt(i int) mongo.BulkWriteError {
	return mongo.BulkWriteError{WriteError: mongo.WriteError{Index: i, Code: 11000, Message: "E11000 duplicate key"}}
}

// Each statement's outcome is read from the reply only when the reply
// accounts for every statement once; otherwise only upserts it names by
// _id count as applied.
func TestOutcomes(t *testing.T) {
	ups := upsertsOf("a", "b", "c", "d")
	lost := errors.New("connection reset")
	// What each statement's error is: "" none, "dup", "unconfirmed", "lost".
	cases := []struct {
		name string
		res  *mongo.BulkWriteResult
		err  error
		want []string
	}{
		{"all-matched", &mongo.BulkWriteResult{MatchedCount: 4}, nil, []string{"", "", "", ""}},
		{"matched-and-upserted", &mongo.BulkWriteResult{MatchedCount: 2, UpsertedCount: 2,
			UpsertedIDs: map[int64]any{1: "b", 3: "d"}}, nil, []string{"", "", "", ""}},
		{"one-duplicate", &mongo.BulkWriteResult{MatchedCount: 2, UpsertedCount: 1, UpsertedIDs: map[int64]any{0: "a"}},
			mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{dupAt(2)}}, []string{"", "", "dup", ""}},
		// A server that stops at the first failure and counts nothing.
		{"stopped-at-failure", &mongo.BulkWriteResult{},
			mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{dupAt(0)}},
			[]string{"unconfirmed", "unconfirmed", "unconfirmed", "unconfirmed"}},
		{"upsert-named-kept", &mongo.BulkWriteResult{UpsertedCount: 1, UpsertedIDs: map[int64]any{1: "b"}},
			mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{dupAt(0)}},
			[]string{"unconfirmed", "", "unconfirmed", "unconfirmed"}},
		// A server that numbers the upserts among themselves: the _ids
		// still name the statements.
		{"upserts-numbered-apart", &mongo.BulkWriteResult{MatchedCount: 1, UpsertedCount: 3,
			UpsertedIDs: map[int64]any{0: "b", 1: "c", 2: "d"}}, nil, []string{"", "", "", ""}},
		{"upsert-of-another-id", &mongo.BulkWriteResult{MatchedCount: 3, UpsertedCount: 1, UpsertedIDs: map[int64]any{1: "x"}},
			nil, []string{"unconfirmed", "unconfirmed", "unconfirmed", "unconfirmed"}},
		{"counts-short", &mongo.BulkWriteResult{MatchedCount: 3}, nil,
			[]string{"unconfirmed", "unconfirmed", "unconfirmed", "unconfirmed"}},
		{"error-twice-on-one", &mongo.BulkWriteResult{MatchedCount: 2},
			mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{dupAt(1), dupAt(1)}},
			[]string{"unconfirmed", "unconfirmed", "unconfirmed", "unconfirmed"}},
		{"index-out-of-range", &mongo.BulkWriteResult{MatchedCount: 3},
			mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{dupAt(7)}},
			[]string{"unconfirmed", "unconfirmed", "unconfirmed", "unconfirmed"}},
		{"write-concern", &mongo.BulkWriteResult{MatchedCount: 4},
			mongo.BulkWriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64, Message: "waiting for replication timed out"}},
			[]string{"lost", "lost", "lost", "lost"}},
		{"connection", nil, lost, []string{"lost", "lost", "lost", "lost"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := Outcomes(ups, c.res, c.err)
			for i, err := range errs {
				var unconfirmed *Unconfirmed
				got := ""
				switch {
				case err == nil:
				case errors.As(err, &unconfirmed):
					got = "unconfirmed"
				case errkind.Of(err) == errkind.Duplicate:
					got = "dup"
				case c.err != nil && err.Error() == c.err.Error():
					got = "lost"
				default:
					got = fmt.Sprintf("other: %v", err)
				}
				if got != c.want[i] {
					t.Errorf("statement %d: %s, want %s", i, got, c.want[i])
				}
			}
		})
	}
}
