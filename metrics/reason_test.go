package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
)

// Reason labels a retried flush by the kind the classifier gives its
// error: a panic is a *PanicError, not a message that says "panic".
func TestReason(t *testing.T) {
	lost := mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection reset by peer"}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, "other"},
		{"flush deadline", fmt.Errorf("upsert: %w", context.DeadlineExceeded), "timeout"},
		{"server selection past the deadline", topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}, "timeout"},
		{"max time expired", mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, "timeout"},
		{"connection lost", lost, "network"},
		{"read cut by the flush deadline", mongo.CommandError{Labels: []string{"NetworkError"}, Message: "incomplete read of message header: context deadline exceeded",
			Wrapped: topology.ConnectionError{Wrapped: context.DeadlineExceeded}}, "timeout"},
		{"no suitable server", topology.ServerSelectionError{Wrapped: errors.New("no primary available")}, "network"},
		{"set-up required", &layout.Required{Err: errors.New("creating capped collection logs: refused")}, "setup"},
		{"set-up required, connection lost", &layout.Required{Err: lost}, "network"},
		{"panic", errkind.Recovered("boom"), "panic"},
		{"wrapped panic", fmt.Errorf("chunk a: %w", errkind.Recovered("boom")), "panic"},
		{"step-down", mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, "server"},
		{"refused", mongo.CommandError{Code: 13, Name: "Unauthorized"}, "server"},
		{"server message that says panic", mongo.CommandError{Code: 2, Message: "panic: in a field name"}, "server"},
		{"plain error that says panic", errors.New("parking 3 records: panic: in a reason"), "other"},
		{"canceled", context.Canceled, "other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reason(c.err); got != c.want {
				t.Errorf("Reason(%v) = %q, want %q", c.err, got, c.want)
			}
		})
	}
}
