package writer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
)

// Classify sorts constructed driver errors, as the driver returns them,
// without a server.
func TestClassify(t *testing.T) {
	dupWrite := mongo.WriteError{Index: 0, Code: 11000, Message: "E11000 duplicate key error"}
	cases := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, OK},

		// Duplicate keys: the bucket exists and the filter missed it.
		{"write exception 11000", mongo.WriteException{WriteErrors: []mongo.WriteError{dupWrite}}, Duplicate},
		{"write exception 11001", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11001}}}, Duplicate},
		{"command error 11000", mongo.CommandError{Code: 11000, Message: "E11000 duplicate key"}, Duplicate},
		{"bulk write 11000", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: dupWrite}}}, Duplicate},
		{"wrapped 11000", fmt.Errorf("upsert: %w", mongo.WriteException{WriteErrors: []mongo.WriteError{dupWrite}}), Duplicate},

		// Write conflicts: retry the same write.
		{"write conflict", mongo.CommandError{Code: 112, Name: "WriteConflict", Labels: []string{"TransientTransactionError"}}, Conflict},
		{"write conflict in write errors", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 112}}}, Conflict},

		// Transient: elections, shutdowns, network, timeouts, unknown.
		{"retryable write label", mongo.CommandError{Code: 999999, Labels: []string{"RetryableWriteError"}}, Transient},
		{"network error label", mongo.CommandError{Code: 6, Labels: []string{"NetworkError"}}, Transient},
		{"not writable primary", mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, Transient},
		{"primary stepped down", mongo.CommandError{Code: 189}, Transient},
		{"shutdown in progress", mongo.CommandError{Code: 91}, Transient},
		{"exceeded time limit", mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, Transient},
		{"write concern error", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64, Name: "WriteConcernFailed"},
			Labels: []string{"RetryableWriteError"}}, Transient},
		{"write concern shutdown", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 91}}, Transient},
		{"deadline", context.DeadlineExceeded, Transient},
		{"wrapped deadline", fmt.Errorf("server selection: %w", context.DeadlineExceeded), Transient},
		{"canceled", context.Canceled, Transient},
		{"client disconnected", mongo.ErrClientDisconnected, Transient},
		{"unknown server error", mongo.CommandError{Code: 424242, Message: "something new"}, Transient},
		{"plain error", errors.New("connection reset by peer"), Transient},

		// Poison: the content can never be stored.
		{"document too large (driver)", driver.ErrDocumentTooLarge, Poison},
		{"wrapped document too large", fmt.Errorf("insert: %w", driver.ErrDocumentTooLarge), Poison},
		{"BSONObjectTooLarge", mongo.CommandError{Code: 10334}, Poison},
		{"too large after update", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 17419}}}, Poison},
		{"dollar field", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 52}}}, Poison},
		{"dotted field", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 57}}}, Poison},
		{"bad value", mongo.CommandError{Code: 2, Name: "BadValue"}, Poison},
		{"bulk write too large", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 10334}}}}, Poison},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Classify(c.err); got != c.want {
				t.Errorf("Classify(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// Every class has a name for log lines.
func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{OK: "ok", Duplicate: "duplicate key", Conflict: "write conflict",
		Transient: "transient", Poison: "poison"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", c, c.String(), want)
		}
	}
}
