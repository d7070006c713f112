package instance

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/address"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/description"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// An outage is one warning, cause first, at its first failure; a reminder
// a minute on; one line when a command is answered again, with how long
// and the chunks given back. A failure of a command started before the
// last answer (a flush still waiting when the server came back) starts no
// new outage, and errors other than a failed server selection none at all.
func TestOutageLines(t *testing.T) {
	refused := topology.ServerSelectionError{Wrapped: context.DeadlineExceeded, Desc: description.Topology{Servers: []description.Server{{
		Addr: address.Address("db1:27017"), LastError: topology.ConnectionError{Wrapped: &net.OpError{Op: "dial", Net: "tcp",
			Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}}}}}
	log := &syncBuffer{}
	now := time.Date(2024, 6, 1, 15, 59, 3, 0, time.UTC)
	o := newOutage(NewLogger(log, "m", conf.LogInfo), "mongodb://u:secret@db1:27017/logs?authSource=admin")
	o.now = func() time.Time { return now }
	lines := func() []string { return strings.Split(strings.TrimSpace(log.String()), "\n") }

	o.failed(errors.New("not an outage"), now, true)
	if log.String() != "" {
		t.Fatalf("an error other than a failed server selection is taken for an outage:\n%s", log)
	}
	o.failed(refused, now, true)
	o.retry()
	now = now.Add(10 * time.Second)
	o.failed(refused, now, true)
	o.retry()
	want := "[ warn] [out_mongodb:m] cannot reach MongoDB at db1:27017: connection refused; retrying (chunk kept by Fluent Bit)"
	if l := lines(); len(l) != 1 || !strings.HasSuffix(l[0], want) || len(l[0]) > 200 {
		t.Fatalf("want one line ending %q, at most 200 characters:\n%s", want, log)
	}
	now = now.Add(time.Minute)
	o.failed(refused, now, true)
	o.retry()
	if l := lines(); len(l) != 2 || !strings.HasSuffix(l[1], "cannot reach MongoDB at db1:27017 for 1m10s: connection refused; 2 chunks retried so far (kept by Fluent Bit)") {
		t.Fatalf("want a reminder a minute on:\n%s", log)
	}
	started := now
	now = now.Add(23 * time.Second)
	o.ok(started)
	if l := lines(); len(l) != 3 || !strings.HasSuffix(l[2], "[ info] [out_mongodb:m] MongoDB at db1:27017 is back after 1m33s (3 chunks retried)") {
		t.Fatalf("want the recovery said:\n%s", log)
	}
	o.failed(refused, started.Add(-time.Second), true)
	if l := lines(); len(l) != 3 {
		t.Fatalf("a command started before the answer starts a new outage:\n%s", log)
	}
	if strings.Contains(log.String(), "secret") {
		t.Errorf("a credential in the log:\n%s", log)
	}
}
