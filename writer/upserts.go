package writer

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Unconfirmed is the error of a statement of a multi-statement command whose
// reply does not show whether the statement applied. MongoDB answers an
// unordered command with an error per failed statement and counts for the
// rest; some MongoDB-compatible servers stop at the first failure, count
// nothing and name the wrong statement. The writer repeats such a statement
// in a command of its own: it applies at most once, and its outcome is then
// its own.
type Unconfirmed struct{ Err error }

func (e *Unconfirmed) Error() string {
	return "the server's reply does not say whether this statement applied: " + e.Err.Error()
}

func (e *Unconfirmed) Unwrap() error { return e.Err }

// Outcomes turns the reply to an unordered update command of ups (res and
// err as the driver returns them) into one error per statement. The reply
// is trusted statement by statement only when it accounts for every
// statement exactly once (an error, a match or an upsert of the statement's
// own _id) and no write concern failed; otherwise only the upserts it names
// are known applied, and the others are Unconfirmed. An update that may not
// insert and matched nothing leaves the counts short, so its command's
// other statements are Unconfirmed too: alone, each says what it did. An error that is not a
// bulk write error (a lost connection, a timeout) is every statement's.
func Outcomes(ups []Upsert, res *mongo.BulkWriteResult, err error) []error {
	errs := make([]error, len(ups))
	var bwe mongo.BulkWriteException
	if err != nil && !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if res == nil {
		res = &mongo.BulkWriteResult{}
	}
	// An upsert is known by the _id it inserted: some servers number the
	// upserts of a command among themselves, not among its statements. The
	// statements of one command name distinct buckets, so an inserted _id
	// names its statement.
	byID := map[string]int{}
	for i := range ups {
		if id, ok := ups[i].Filter.Lookup(model.ID).StringValueOK(); ok {
			if _, dup := byID[id]; dup {
				byID[id] = -1
			} else {
				byID[id] = i
			}
		}
	}
	inserted := map[int]bool{}
	for _, id := range res.UpsertedIDs {
		s, _ := id.(string)
		if i, ok := byID[s]; ok && i >= 0 {
			inserted[i] = true
		}
	}
	upserted := func(i int) bool { return inserted[i] }
	accounted := len(bwe.WriteErrors) + int(res.MatchedCount+res.UpsertedCount)
	trusted := accounted == len(ups)
	failed := map[int]bool{}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(ups) || failed[we.Index] {
			trusted = false
		}
		failed[we.Index] = true
	}
	if len(inserted) != len(res.UpsertedIDs) {
		trusted = false
	}
	for i := range inserted {
		if failed[i] {
			trusted = false
		}
	}
	if trusted {
		for _, we := range bwe.WriteErrors {
			errs[we.Index] = mongo.WriteException{WriteErrors: []mongo.WriteError{we.WriteError}}
		}
		return errs
	}
	cause := err
	if cause == nil {
		cause = fmt.Errorf("the reply accounts for %d of %d statements", accounted, len(ups))
	}
	for i := range ups {
		if !upserted(i) || failed[i] {
			errs[i] = &Unconfirmed{Err: cause}
		}
	}
	return errs
}
