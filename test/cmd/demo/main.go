// Command demo sends sample logs through the plugin into MongoDB and prints
// what landed: through a fluent-bit found on PATH, otherwise through the
// host harness that calls the plugin as Fluent Bit does. Without MONGO_URI
// it starts a local MongoDB-compatible server (FerretDB) first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

const database = "fluentbit_demo"

func main() {
	so := flag.String("so", "../build/out_mongodb.so", "the plugin")
	flag.Parse()
	if err := run(*so); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(so string) error {
	tmp, err := os.MkdirTemp("", "out_mongodb_demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	uri, ok := mongotest.External()
	if !ok {
		srv, err := mongotest.StartFerret(tmp, "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer srv.Stop()
		uri = srv.URI
		fmt.Println("started a local MongoDB-compatible server (FerretDB) at", uri)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(time.Minute))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	db := client.Database(database)
	if err := db.Drop(context.Background()); err != nil {
		return err
	}

	if fb, err := exec.LookPath("fluent-bit"); err == nil {
		err = viaFluentBit(fb, so, uri, tmp)
	} else {
		err = viaHarness(so, uri, tmp)
	}
	if err != nil {
		return err
	}
	return report(db)
}

// viaFluentBit tails the sample app log with a real Fluent Bit.
func viaFluentBit(fb, so, uri, tmp string) error {
	parsers := filepath.Join(tmp, "parsers.conf")
	if err := os.WriteFile(parsers, []byte("[PARSER]\n    Name json\n    Format json\n    Time_Key ts\n    Time_Format %Y-%m-%dT%H:%M:%S.%LZ\n    Time_Keep On\n"), 0o644); err != nil {
		return err
	}
	logFile, _ := filepath.Abs("testdata/app-5000.log")
	fmt.Println("sending testdata/app-5000.log through", fb)
	cmd := exec.Command(fb, "-q", "-f", "1", "-R", parsers, "-e", so,
		"-i", "tail", "-p", "path="+logFile, "-p", "parser=json", "-p", "read_from_head=on", "-p", "exit_on_eof=on", "-t", "app.log",
		"-o", "mongodb", "-m", "*", "-p", "uri="+uri, "-p", "database="+database, "-p", "collection=logs",
		"-p", "stats=cost", "-p", "count_by=level")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		return fmt.Errorf("fluent-bit did not finish in 2 minutes")
	}
}

// viaHarness flushes the recorded Fluent Bit chunk of the same log.
func viaHarness(so, uri, tmp string) error {
	bin, err := harness.Build("harness", tmp)
	if err != nil {
		return err
	}
	h, err := harness.Start(bin, so)
	if err != nil {
		return err
	}
	fmt.Println("no fluent-bit on PATH: sending testdata/chunk-app-json-5000.msgpack through the host harness")
	steps := []func() (int, error){
		func() (int, error) { _, rc, err := h.Register(); return rc, err },
		func() (int, error) {
			return h.Init("demo", map[string]string{"uri": uri, "database": database, "collection": "logs", "stats": "cost", "count_by": "level"})
		},
		func() (int, error) { return h.Flush("demo", "app.log", "testdata/chunk-app-json-5000.msgpack") },
		func() (int, error) { return h.Exit("demo") },
		func() (int, error) { return h.Unregister() },
	}
	for i, step := range steps {
		rc, err := step()
		if err == nil && i > 0 && i < 4 && rc != harness.FLBOK {
			err = fmt.Errorf("return code %d", rc)
		}
		if err != nil {
			h.Close()
			return fmt.Errorf("%w\n%s", err, h.Stderr())
		}
	}
	err = h.Close()
	fmt.Print(h.Stderr())
	return err
}

// report prints the buckets and entries stored.
func report(db *mongo.Database) error {
	ctx := context.Background()
	cur, err := db.Collection("logs").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).
		SetProjection(bson.D{{Key: "logs", Value: 0}, {Key: "ops", Value: 0}}))
	if err != nil {
		return err
	}
	// Raw documents keep the fields in the order they are stored.
	var buckets []bson.Raw
	if err := cur.All(ctx, &buckets); err != nil {
		return err
	}
	entries := 0
	for _, b := range buckets {
		n, _ := b.Lookup("count").AsInt64OK()
		entries += int(n)
	}
	if len(buckets) > 0 {
		fmt.Println("\nthe first bucket, without its entries (logs) and its writes (ops), its fields in stored order:")
		out, _ := bson.MarshalExtJSONIndent(buckets[0], false, false, "", "  ")
		fmt.Println(string(out))
	}
	dead, err := db.Collection("logs_dead").CountDocuments(ctx, bson.D{})
	if err != nil {
		return err
	}
	fmt.Printf("\n%d records parked in %s.logs_dead\n", dead, database)
	fmt.Printf("%s.logs: %d buckets holding %d entries\n", database, len(buckets), entries)

	// What mongolog stats shows of them: bucket fields alone.
	cfg, err := conf.Parse(conf.Map{"uri": "mongodb://unused", "database": database, "collection": "logs", "stats": "cost", "count_by": "level"}, nil, nil)
	if err != nil {
		return err
	}
	windows, err := (&mongolog.Reader{DB: db, Cfg: cfg}).Stats(ctx, mongolog.Query{}, 0)
	if err != nil {
		return err
	}
	// The demo's server is gone when it ends: no command to run again.
	fmt.Println("\nwhat mongolog stats shows of them (from the bucket fields alone):")
	return mongolog.PrintStats(os.Stdout, windows, cfg.BucketWindow, true)
}
