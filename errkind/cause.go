package errkind

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/auth"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// maxCause bounds the length of a cause Cause gives.
const maxCause = 120

// NoServer reports whether err says that no server could be reached to
// send a command to: the driver's server selection failed (the server is
// down, unknown, or refuses the connection or the login), whatever
// deadline ended it. A command that failed on a server that answers
// otherwise (a lost connection, a refusal) is not one.
func NoServer(err error) bool {
	return errors.As(err, new(topology.ServerSelectionError))
}

// Cause is the innermost cause of err, short, as a person reads it:
// "connection refused", "no such host db1", "i/o timeout",
// "authentication failed", "TLS: certificate signed by unknown
// authority". For a failed server selection it is the last error of each
// server the driver tried (once each, in the topology's order), not the
// deadline that ended the wait; an error it does not know is given as its
// innermost text, cut to 120 bytes.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	var sse topology.ServerSelectionError
	if !errors.As(err, &sse) {
		return cut(cause(err))
	}
	var causes []string
	for _, s := range sse.Desc.Servers {
		if s.LastError == nil {
			continue
		}
		if c := cause(s.LastError); !slices.Contains(causes, c) {
			causes = append(causes, c)
		}
	}
	switch {
	case len(causes) > 0:
		return cut(strings.Join(causes, ", "))
	case len(sse.Desc.Servers) > 0:
		// Servers answered, none fit for the command: a replica set
		// without a primary, or a read preference nothing meets.
		return "no server fit for the operation answered in time (no primary?)"
	}
	return "no server answered in time"
}

// cause is Cause of one error, not a server selection's.
func cause(err error) string {
	var (
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		authErr  *auth.Error
		netErr   net.Error
	)
	switch {
	case errors.As(err, &verify) && verify.Err != nil:
		return cause(verify.Err)
	case errors.As(err, &unknown):
		return "TLS: certificate signed by unknown authority"
	case errors.As(err, &hostname):
		return "TLS: " + strings.TrimPrefix(hostname.Error(), "x509: ")
	case errors.As(err, &invalid):
		return "TLS: " + strings.TrimPrefix(invalid.Error(), "x509: ")
	case errors.As(err, &record):
		return "TLS: the server does not answer in TLS"
	case errors.As(err, &alert):
		return "TLS: the server refused the handshake (" + alert.Error() + ")"
	case authFailed(err) || errors.As(err, &authErr):
		return "authentication failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "no route to host"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network is unreachable"
	case errors.As(err, &dns):
		switch {
		case dns.IsNotFound:
			return "no such host " + dns.Name
		case dns.IsTimeout:
			return "DNS lookup of " + dns.Name + " timed out"
		}
		return "DNS lookup of " + dns.Name + " failed: " + dns.Err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return "i/o timeout"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "stopped"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// authFailed reports whether the server answered a login with
// AuthenticationFailed (18).
func authFailed(err error) bool {
	var de driver.Error
	if errors.As(err, &de) && de.Code == 18 {
		return true
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.HasErrorCode(18)
}

// cut shortens s to maxCause bytes, on a character boundary.
func cut(s string) string {
	if len(s) <= maxCause {
		return s
	}
	i := maxCause - len("...")
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}
