// Package mongotest gives tests a MongoDB-wire server: the one named by
// MONGO_URI, or else an in-process FerretDB on SQLite listening on
// 127.0.0.1. Each test gets a database of its own.
package mongotest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Server is a running MongoDB-wire server.
type Server struct {
	URI string
	// TLS, when set, makes the server listen with TLS only (see StartFerretTLS).
	TLS *TLSFiles
	// Real is true for a server given by MONGO_URI (normally a real
	// MongoDB); false for the in-process FerretDB.
	Real bool

	dir    string
	addr   string
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// External returns the MONGO_URI server, if one is set.
func External() (string, bool) {
	uri := os.Getenv("MONGO_URI")
	return uri, uri != ""
}

// Start starts a server for t (or uses MONGO_URI), stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if uri, ok := External(); ok {
		return &Server{URI: uri, Real: true}
	}
	s, err := StartFerret(t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("starting the test server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// TLSFiles are the PEM files of a TLS listener: its certificate and key,
// and the CA its clients' certificates must be signed by (empty: clients
// need none).
type TLSFiles struct{ Cert, Key, CA string }

// StartFerret starts FerretDB with its SQLite files in dir, listening on addr.
func StartFerret(dir, addr string) (*Server, error) {
	return startFerret(&Server{dir: dir, addr: addr})
}

// StartFerretTLS starts FerretDB listening on addr (host:port, the port
// given) with TLS only. URI is left for the caller to set: it names the
// client's CA and certificate files.
func StartFerretTLS(dir, addr string, files TLSFiles) (*Server, error) {
	return startFerret(&Server{dir: dir, addr: addr, TLS: &files})
}

func startFerret(s *Server) (*Server, error) {
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	listener := ferretdb.ListenerConfig{TCP: s.addr}
	if s.TLS != nil {
		listener = ferretdb.ListenerConfig{TLS: s.addr, TLSCertFile: s.TLS.Cert, TLSKeyFile: s.TLS.Key, TLSCAFile: s.TLS.CA}
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  listener,
		Handler:   "sqlite",
		SQLiteURL: "file:" + s.dir + "/",
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	uri := f.MongoDBURI()
	if s.TLS != nil {
		s.mu.Lock()
		s.cancel, s.done = cancel, done
		s.mu.Unlock()
		return waitListening(s.addr)
	}
	// Keep the port, so a restarted server is found at the same address.
	s.addr = hostOf(uri)
	s.mu.Lock()
	s.URI, s.cancel, s.done = uri, cancel, done
	s.mu.Unlock()
	return waitListening(s.addr)
}

// Host is the host:port the server's URI names.
func (s *Server) Host() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return hostOf(s.URI)
}

// hostOf is the host:port (or the hosts) of a mongodb:// URI.
func hostOf(uri string) string {
	host := uri[strings.Index(uri, "://")+3:]
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	return host
}

func waitListening(addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("test server did not listen on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops an in-process server (a no-op for MONGO_URI).
func (s *Server) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Restart starts a stopped in-process server again on the same address
// and files.
func (s *Server) Restart() error {
	return s.start()
}

// Client connects to s; it is disconnected when t ends.
func (s *Server) Client(t testing.TB) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(s.URI).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// Database returns a fresh database name for t, dropped when t ends.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", time.Now().UnixNano()%1e9, sanitize(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	c := s.Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Database(name).Drop(ctx)
	})
	return name
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
