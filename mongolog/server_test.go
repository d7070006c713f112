package mongolog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// The tests of what mongolog reads and writes talk to a real
// MongoDB-wire server: the one MONGO_URI names, or else the project's test
// server (FerretDB on SQLite, test/cmd/serve, built from the test module
// so that this module stays free of it), started once for the package.

var testServer struct {
	once sync.Once
	uri  string
	err  error
	stop func()
}

// testDirs are removed when the package's tests end.
var testDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	if testServer.stop != nil {
		testServer.stop()
	}
	for _, d := range testDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// packageDir is a new directory that lasts until the package's tests end.
func packageDir() (string, error) {
	dir, err := os.MkdirTemp("", "mongolog-test")
	if err == nil {
		testDirs = append(testDirs, dir)
	}
	return dir, err
}

// serverURI is the test server's URI, started at the first call.
func serverURI(t *testing.T) string {
	t.Helper()
	testServer.once.Do(func() {
		if uri := os.Getenv("MONGO_URI"); uri != "" {
			testServer.uri = uri
			return
		}
		testServer.uri, testServer.stop, testServer.err = startServe()
	})
	if testServer.err != nil {
		t.Fatalf("starting the test server: %v", testServer.err)
	}
	return testServer.uri
}

// startServe builds and starts test/cmd/serve on a free port.
func startServe() (string, func(), error) {
	dir, err := packageDir()
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "serve")
	build := exec.Command("go", "build", "-o", bin, "./cmd/serve")
	build.Dir = filepath.Join("..", "test")
	if out, err := build.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building test/cmd/serve: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "-addr", addr, "-data", filepath.Join(dir, "data"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening") {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return "mongodb://" + addr + "/", stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("test/cmd/serve ended before it listened on %s", addr)
}

// testDB is a fresh database of the test server for t, dropped at its end.
func testDB(t *testing.T) *mongo.Database {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(serverURI(t)).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("t%d_%s", time.Now().UnixNano()%1e9, strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	db := c.Database(name)
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = c.Disconnect(context.Background())
	})
	return db
}

// keys are the plugin keys of a target in db: collection logs, write_batch
// 20 (the test server deadlocks on larger update batches), and kv.
func keys(t *testing.T, db *mongo.Database, kv ...string) map[string]string {
	m := map[string]string{"uri": serverURI(t), "database": db.Name(), "collection": "logs", "write_batch": "20"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// config is the configuration of keys.
func config(t *testing.T, keys map[string]string) *conf.Config {
	t.Helper()
	cfg, err := Target{Keys: keys}.Config(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// reader is a Reader of the target of keys, its connection closed when
// the test ends.
func reader(t *testing.T, keys map[string]string) *Reader {
	t.Helper()
	cfg := config(t, keys)
	db, closeFn, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return &Reader{DB: db, Cfg: cfg}
}

// rec is a JSON line stored at a time.
type rec struct {
	at   time.Time
	line string
}

// store writes recs through the plugin's own instance configured by keys
// (with parser json, so each line's fields become the record's), in
// chunks of per records.
func store(t *testing.T, keys map[string]string, per int, recs ...rec) {
	t.Helper()
	m := conf.Map{"parser": "json", "plugin_log_level": "warn"}
	for k, v := range keys {
		m[k] = v
	}
	var log strings.Builder
	in, err := instance.New(m, "test", &log)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Exit()
	for len(recs) > 0 {
		n := min(per, len(recs))
		var chunk bytes.Buffer
		for _, r := range recs[:n] {
			appendRecord(&chunk, r.at, r.line)
		}
		if st := in.Flush("app.log", chunk.Bytes()); st != sink.Done {
			t.Fatalf("storing %d records: %v\n%s", n, st, log.String())
		}
		recs = recs[n:]
	}
}

// count is the number of documents of coll matching filter.
func count(t *testing.T, db *mongo.Database, coll string, filter bson.D) int64 {
	t.Helper()
	n, err := db.Collection(coll).CountDocuments(context.Background(), filter)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
