// Package e2e drives the real plugin (.so) through the host harness, which
// calls it exactly as Fluent Bit's Go proxy does, into a MongoDB-wire server.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

var (
	soPath   string // the plugin under test
	hostPath string // the fbhost binary
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// make test builds the plugin once and passes it in; go test alone
	// builds it here.
	soPath = os.Getenv("OUT_MONGODB_SO")
	if soPath == "" {
		soPath = filepath.Join(tmp, "out_mongodb.so")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", soPath, "./plugin")
		cmd.Dir = "../.."
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the plugin:", err)
			return 1
		}
	}
	if hostPath, err = harness.Build("../harness", tmp); err != nil {
		fmt.Fprintln(os.Stderr, "building fbhost:", err)
		return 1
	}
	return m.Run()
}

// fixture is the path of a chunk or log file in testdata.
func fixture(name string) string {
	return filepath.Join("..", "testdata", name)
}

// env is one test's server, database and running host.
type env struct {
	t      *testing.T
	srv    *mongotest.Server
	db     *mongo.Database
	dbName string
	host   *harness.Host
	serial string // the Serial proxy's address, once upstream started it
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newDBEnv(t)
	e.host = startHost(t)
	return e
}

// newDBEnv is a server and database without a plugin host.
func newDBEnv(t *testing.T) *env {
	t.Helper()
	srv := mongotest.Start(t)
	name := srv.Database(t)
	return &env{t: t, srv: srv, dbName: name, db: srv.Client(t).Database(name)}
}

// startHost starts a host process, its environment this one's plus env.
func startHost(t *testing.T, env ...string) *harness.Host {
	t.Helper()
	h, err := harness.Start(hostPath, soPath, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host: %v", err)
		}
		if t.Failed() {
			t.Logf("plugin log:\n%s", h.Stderr())
		}
	})
	if name, rc, err := h.Register(); err != nil || rc != 0 || name != "mongodb" {
		t.Fatalf("register: name %q rc %d err %v", name, rc, err)
	}
	return h
}

// props are an instance's properties on e's server and database. Bucket
// writes go out 20 to a command (write_batch): the test server deadlocks on
// larger update batches.
func (e *env) props(kv ...string) map[string]string {
	p := map[string]string{"uri": e.srv.URI, "database": e.dbName, "collection": "logs", "write_batch": "20"}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

func (e *env) init(id string, props map[string]string) {
	e.t.Helper()
	rc, err := e.host.Init(id, props)
	if err != nil || rc != harness.FLBOK {
		e.t.Fatalf("init %s: rc %d err %v\n%s", id, rc, err, e.host.Stderr())
	}
}

func (e *env) flush(id, tag, file string) int {
	e.t.Helper()
	rc, err := e.host.Flush(id, tag, file)
	if err != nil {
		e.t.Fatalf("flush %s: %v", file, err)
	}
	return rc
}

func (e *env) mustFlush(id, tag, file string) {
	e.t.Helper()
	if rc := e.flush(id, tag, file); rc != harness.FLBOK {
		e.t.Fatalf("flush %s: rc %d, want FLB_OK\n%s", file, rc, e.host.Stderr())
	}
}

func (e *env) exit(id string) {
	e.t.Helper()
	if rc, err := e.host.Exit(id); err != nil || rc != harness.FLBOK {
		e.t.Fatalf("exit %s: rc %d err %v", id, rc, err)
	}
}

// all returns every document of collection coll.
func (e *env) all(coll string) []bson.Raw {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, err := e.db.Collection(coll).Find(ctx, bson.D{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	if err := cur.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// writeFile writes data to a file in t's temp dir and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLog waits until the plugin has logged sub (its log arrives
// asynchronously) and reports whether it did.
func waitLog(h *harness.Host, sub string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(h.Stderr(), sub) {
			return true
		}
	}
	return false
}
