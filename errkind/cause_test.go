package errkind

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/address"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/description"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// selection is the error of a server selection that waited until wait
// ended, each server's last error as given (addr, error pairs).
func selection(wait error, servers ...any) topology.ServerSelectionError {
	var desc description.Topology
	for i := 0; i+1 < len(servers); i += 2 {
		last, _ := servers[i+1].(error)
		desc.Servers = append(desc.Servers, description.Server{Addr: address.Address(servers[i].(string)), LastError: last})
	}
	return topology.ServerSelectionError{Desc: desc, Wrapped: wait}
}

// dial is the error of a connection the driver could not open: err
// under the net package's and the driver's wrappings.
func dial(err error) error {
	return topology.ConnectionError{Wrapped: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
}

// Cause digs the innermost cause out of the driver's long errors,
// constructed here as the driver builds them, no server needed.
func TestCause(t *testing.T) {
	refused := dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED})
	long := strings.Repeat("word ", 40)
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"refused, the flush's deadline ended the wait", selection(context.DeadlineExceeded, "db1:27017", refused), "connection refused"},
		{"refused, wrapped by the sink", fmt.Errorf("looking for records of chunk 1 parked before in logs_dead: %w",
			selection(nil, "db1:27017", refused)), "connection refused"},
		{"no such host", selection(context.DeadlineExceeded, "db1:27017", dial(&net.DNSError{Err: "no such host", Name: "db1", IsNotFound: true})), "no such host db1"},
		{"DNS timeout", selection(context.DeadlineExceeded, "db1:27017", dial(&net.DNSError{Err: "i/o timeout", Name: "db1", IsTimeout: true})), "DNS lookup of db1 timed out"},
		{"dial timeout", selection(context.DeadlineExceeded, "db1:27017", dial(os.ErrDeadlineExceeded)), "i/o timeout"},
		{"reset", selection(context.DeadlineExceeded, "db1:27017", topology.ConnectionError{Wrapped: &net.OpError{Op: "read", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}}),
			"connection reset by peer"},
		{"no route", selection(context.DeadlineExceeded, "db1:27017", dial(&os.SyscallError{Syscall: "connect", Err: syscall.EHOSTUNREACH})), "no route to host"},
		{"authentication failed", selection(context.DeadlineExceeded, "db1:27017",
			topology.ConnectionError{Wrapped: fmt.Errorf("unable to authenticate using mechanism \"SCRAM-SHA-256\": %w", driver.Error{Code: 18, Message: "Authentication failed."})}),
			"authentication failed"},
		{"TLS, unknown authority", selection(context.DeadlineExceeded, "db1:27017",
			topology.ConnectionError{Wrapped: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}), "TLS: certificate signed by unknown authority"},
		{"TLS, wrong host", selection(context.DeadlineExceeded, "db1:27017",
			topology.ConnectionError{Wrapped: &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"db2"}}, Host: "db1"}}}),
			"TLS: certificate is valid for db2, not db1"},
		{"TLS to a plain server", selection(context.DeadlineExceeded, "db1:27017",
			topology.ConnectionError{Wrapped: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}), "TLS: the server does not answer in TLS"},
		{"closed by the server", selection(context.DeadlineExceeded, "db1:27017", topology.ConnectionError{Wrapped: io.EOF}), "connection closed by the server"},
		{"two servers, one cause", selection(context.DeadlineExceeded, "db1:27017", refused, "db2:27017", refused), "connection refused"},
		{"two servers, two causes", selection(context.DeadlineExceeded, "db1:27017", refused, "db2:27017", dial(os.ErrDeadlineExceeded)), "connection refused, i/o timeout"},
		{"servers without errors: no primary", selection(context.DeadlineExceeded, "db1:27017", nil, "db2:27017", nil),
			"no server fit for the operation answered in time (no primary?)"},
		{"no server known", selection(context.DeadlineExceeded), "no server answered in time"},
		{"not a selection: a lost connection", mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection(db1:27017[-3]) incomplete read of message header: EOF",
			Wrapped: topology.ConnectionError{Wrapped: io.EOF}}, "connection closed by the server"},
		{"unknown, innermost text", fmt.Errorf("writing: %w", errors.New("something new")), "something new"},
		{"unknown, long, cut", selection(context.DeadlineExceeded, "db1:27017", errors.New(long)), long[:117] + "..."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Cause(c.err); got != c.want {
				t.Errorf("Cause(%v)\n = %q\nwant %q", c.err, got, c.want)
			}
		})
	}
}

// NoServer tells a failed server selection, however wrapped and whatever
// ended it, from errors of a server that answered or of a connection lost
// under a command.
func TestNoServer(t *testing.T) {
	refused := dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED})
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"selection, deadline", selection(context.DeadlineExceeded, "db1:27017", refused), true},
		{"selection, its own timeout, wrapped", fmt.Errorf("preparing collection logs: %w", selection(nil, "db1:27017", refused)), true},
		{"lost connection", mongo.CommandError{Labels: []string{"NetworkError"}, Wrapped: topology.ConnectionError{Wrapped: io.EOF}}, false},
		{"refusal", mongo.CommandError{Code: 59, Name: "CommandNotFound"}, false},
		{"deadline", context.DeadlineExceeded, false},
	} {
		if got := NoServer(c.err); got != c.want {
			t.Errorf("%s: NoServer = %v, want %v", c.name, got, c.want)
		}
	}
}
