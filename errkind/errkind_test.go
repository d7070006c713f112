package errkind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// Of sorts errors as the driver returns them, constructed without a
// server, wrapped or not.
func TestOf(t *testing.T) {
	dup := mongo.WriteError{Index: 0, Code: 11000, Message: "E11000 duplicate key error"}
	lost := mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection(localhost:27017[-3]) incomplete read of message header: EOF",
		Wrapped: topology.ConnectionError{Wrapped: io.EOF}}
	cut := mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection(localhost:27017[-3]) incomplete read of message header: context deadline exceeded",
		Wrapped: topology.ConnectionError{Wrapped: context.DeadlineExceeded}}
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, None},

		{"write exception 11000", mongo.WriteException{WriteErrors: []mongo.WriteError{dup}}, Duplicate},
		{"write exception 11001", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11001}}}, Duplicate},
		{"command error 11000", mongo.CommandError{Code: 11000, Message: "E11000 duplicate key"}, Duplicate},
		{"capped duplicate 12582", mongo.CommandError{Code: 12582}, Duplicate},
		{"bulk write 11000", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: dup}}}, Duplicate},
		{"wrapped 11000", fmt.Errorf("upsert: %w", mongo.WriteException{WriteErrors: []mongo.WriteError{dup}}), Duplicate},

		{"write conflict", mongo.CommandError{Code: 112, Name: "WriteConflict", Labels: []string{"TransientTransactionError"}}, Conflict},
		{"write conflict in write errors", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 112}}}, Conflict},

		// Elections, shutdowns, lost primaries: "not now".
		{"shutdown in progress 91", mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}, Unavailable},
		{"not writable primary 10107", mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, Unavailable},
		{"interrupted at shutdown 11600", mongo.CommandError{Code: 11600, Name: "InterruptedAtShutdown"}, Unavailable},
		{"interrupted by a state change 11602", mongo.CommandError{Code: 11602, Name: "InterruptedDueToReplStateChange"}, Unavailable},
		{"primary stepped down 189", mongo.CommandError{Code: 189, Name: "PrimarySteppedDown"}, Unavailable},
		{"not primary, no secondary ok 13435", mongo.CommandError{Code: 13435, Name: "NotPrimaryNoSecondaryOk"}, Unavailable},
		{"not primary or secondary 13436", mongo.CommandError{Code: 13436, Name: "NotPrimaryOrSecondary"}, Unavailable},
		{"host unreachable 6", mongo.CommandError{Code: 6, Name: "HostUnreachable"}, Unavailable},
		{"exceeded time limit 262", mongo.CommandError{Code: 262, Name: "ExceededTimeLimit"}, Unavailable},
		{"stale shard version 63", mongo.CommandError{Code: 63}, Unavailable},
		{"retryable write label", mongo.CommandError{Code: 999999, Labels: []string{"RetryableWriteError"}}, Unavailable},
		{"write concern shutdown", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 91}}, Unavailable},
		{"write concern failed, retryable", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64, Name: "WriteConcernFailed"},
			Labels: []string{"RetryableWriteError"}}, Unavailable},
		{"bulk write concern 11602", mongo.BulkWriteException{WriteConcernError: &mongo.WriteConcernError{Code: 11602}}, Unavailable},
		{"wrapped step-down", fmt.Errorf("creating index {key: 1} on logs: %w", mongo.CommandError{Code: 10107}), Unavailable},

		// No answer in time.
		{"deadline", context.DeadlineExceeded, Timeout},
		{"wrapped deadline", fmt.Errorf("server selection: %w", context.DeadlineExceeded), Timeout},
		{"server selection past the deadline", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}, Timeout},
		{"max time expired 50", mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, Timeout},
		{"deadline would be exceeded", driver.ErrDeadlineWouldBeExceeded, Timeout},
		{"pool wait queue timeout", topology.WaitQueueTimeoutError{Wrapped: context.DeadlineExceeded}, Timeout},
		{"socket timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, Timeout},

		// The connection was lost under the command, also when the
		// deadline cut it: it may have applied.
		{"connection lost", lost, Lost},
		{"wrapped connection lost", fmt.Errorf("upsert: %w", lost), Lost},
		{"network label on write exception", mongo.WriteException{Labels: []string{"NetworkError"}}, Lost},
		{"read cut by the deadline", cut, Lost},

		// No server to send it to: it was not sent.
		{"no suitable server", topology.ServerSelectionError{Wrapped: errors.New("no primary available")}, Unreachable},

		{"canceled", context.Canceled, Stopped},
		{"client disconnected", mongo.ErrClientDisconnected, Stopped},

		// The server answers no, and will again.
		{"command not supported", mongo.CommandError{Code: 115, Name: "CommandNotSupported"}, Refused},
		{"not implemented", mongo.CommandError{Code: 238, Name: "NotImplemented", Message: "TTL indexes are not implemented"}, Refused},
		{"unauthorized", mongo.CommandError{Code: 13, Name: "Unauthorized"}, Refused},
		{"illegal operation", mongo.CommandError{Code: 20, Name: "IllegalOperation", Message: "not a sharded cluster"}, Refused},
		{"index options conflict", mongo.CommandError{Code: 85, Name: "IndexOptionsConflict"}, Refused},
		{"unknown server error", mongo.CommandError{Code: 424242, Message: "something new"}, Refused},
		{"a message that mentions a panic", mongo.CommandError{Code: 424242, Message: "panic: in the message"}, Refused},

		{"document too large (driver)", driver.ErrDocumentTooLarge, Poison},
		{"wrapped document too large", fmt.Errorf("insert: %w", driver.ErrDocumentTooLarge), Poison},
		{"BSONObjectTooLarge", mongo.CommandError{Code: 10334}, Poison},
		{"too large after update", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 17419}}}, Poison},
		{"dollar field", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 52}}}, Poison},
		{"dotted field", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 57}}}, Poison},
		{"bad value", mongo.CommandError{Code: 2, Name: "BadValue"}, Poison},
		{"bulk write too large", mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 10334}}}}, Poison},

		{"panic", Recovered("boom"), Panic},
		{"wrapped panic", fmt.Errorf("chunk: %w", Recovered(fmt.Errorf("index out of range"))), Panic},
		{"a string that says panic", errors.New("panic: not a panic"), Unknown},
		{"plain error", errors.New("connection reset by peer"), Unknown},
		{"EOF", io.EOF, Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Of(c.err); got != c.want {
				t.Errorf("Of(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// What each kind means to the writer (MayHaveApplied: a write in doubt;
// Retried: the same write again after a backoff), to set-up (Passing:
// wait; Refusal: go on without), to a record's dropped connections
// (Unanswered) and to the metrics (FromServer).
func TestKinds(t *testing.T) {
	type says struct{ mayHaveApplied, retried, passing, refusal, unanswered, fromServer bool }
	cases := []struct {
		kind Kind
		name string
		says
	}{
		{None, "none", says{false, false, false, false, false, false}},
		{Duplicate, "duplicate key", says{false, false, false, true, false, true}},
		{Conflict, "write conflict", says{false, true, true, false, false, true}},
		{Poison, "poison", says{false, false, false, true, false, true}},
		{Unavailable, "unavailable", says{false, true, true, false, false, true}},
		{Timeout, "timeout", says{false, true, true, false, true, false}},
		{Lost, "lost", says{true, true, true, false, true, false}},
		{Unreachable, "unreachable", says{false, true, true, false, true, false}},
		{Stopped, "stopped", says{false, true, true, false, true, false}},
		{Refused, "refused", says{false, true, false, true, false, true}},
		{Panic, "panic", says{false, true, false, false, false, false}},
		{Unknown, "unknown", says{false, true, false, false, false, false}},
	}
	if len(cases) != len(kindNames) {
		t.Fatalf("%d kinds in the table, %d defined", len(cases), len(kindNames))
	}
	for _, c := range cases {
		k := c.kind
		got := says{k.MayHaveApplied(), k.Retried(), k.Passing(), k.Refusal(), k.Unanswered(), k.FromServer()}
		if k.String() != c.name || got != c.says {
			t.Errorf("%v: %+v, want %q %+v", k, got, c.name, c.says)
		}
	}
}

// A panic caught by Guard is a *PanicError with its value and the stack
// where it was raised; its message keeps both.
func TestGuard(t *testing.T) {
	err := Guard(func() error { panic("injected") })
	var p *PanicError
	if !errors.As(err, &p) || p.Value != "injected" {
		t.Fatalf("Guard = %#v, want a *PanicError of %q", err, "injected")
	}
	for _, want := range []string{"panic: injected", "errkind_test.go", "goroutine "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
	want := errors.New("no panic")
	if err := Guard(func() error { return want }); err != want {
		t.Errorf("Guard without a panic = %v, want %v", err, want)
	}
}

// The predicates asked instead of raw codes and driver calls.
func TestPredicates(t *testing.T) {
	exists := mongo.CommandError{Code: 48, Name: "NamespaceExists", Message: "Collection already exists"}
	missing := mongo.CommandError{Code: 26, Name: "NamespaceNotFound", Message: "ns does not exist"}
	cut := mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection(localhost:27017[-3]) incomplete read of message header: context deadline exceeded",
		Wrapped: topology.ConnectionError{Wrapped: context.DeadlineExceeded}}
	for _, c := range []struct {
		name                       string
		err                        error
		exists, notFound, timedOut bool
	}{
		{"exists", fmt.Errorf("create: %w", exists), true, false, false},
		{"not found", missing, false, true, false},
		{"other code", mongo.CommandError{Code: 2, Message: "bad value"}, false, false, false},
		{"nil", nil, false, false, false},
		{"not the driver's", errors.New("code 48"), false, false, false},
		{"deadline", fmt.Errorf("upsert: %w", context.DeadlineExceeded), false, false, true},
		{"read cut by the deadline", cut, false, false, true},
		{"socket timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false, false, true},
		{"connection lost", mongo.CommandError{Labels: []string{"NetworkError"}, Wrapped: topology.ConnectionError{Wrapped: io.EOF}}, false, false, false},
	} {
		if NamespaceExists(c.err) != c.exists || NamespaceNotFound(c.err) != c.notFound || TimedOut(c.err) != c.timedOut {
			t.Errorf("%s: exists %v, not found %v, timed out %v; want %v, %v, %v", c.name,
				NamespaceExists(c.err), NamespaceNotFound(c.err), TimedOut(c.err), c.exists, c.notFound, c.timedOut)
		}
	}
}
