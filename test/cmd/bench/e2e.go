package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// wire counts the commands and bytes the driver sends.
type wire struct{ commands, bytes atomic.Int64 }

func (w *wire) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		switch e.CommandName {
		case "update", "insert", "find", "findAndModify":
			w.commands.Add(1)
			w.bytes.Add(int64(len(e.Command)))
		}
	}}
}

// stored is what one mode left in the database.
type stored struct {
	docs, entries, entryBytes, indexes int
	// docBytes is the documents' size, opsBytes what their ops arrays
	// (the exactly-once bookkeeping) take of it.
	docBytes, opsBytes int
}

// bookkeeping is the ops arrays' share of the buckets' bytes.
func (st stored) bookkeeping() float64 { return float64(st.opsBytes) / float64(st.docBytes) }

// endToEnd writes into the test server (or MONGO_URI) and returns the
// chunks whose commands exceed the formula (see viaLatency).
func endToEnd(delay time.Duration) ([]string, error) {
	uri, external := mongotest.External()
	if !external {
		dir, err := os.MkdirTemp("", "bench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		srv, err := mongotest.StartFerret(dir, "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		uri = srv.URI
	}
	if err := oneFlush(uri); err != nil {
		return nil, err
	}
	if err := quietSource(uri); err != nil {
		return nil, err
	}
	// The plugin lowers write_batch to 20 on FerretDB v1 (the test
	// server), which deadlocks on larger batches.
	batch := 100
	if !external {
		batch = 20
	}
	return viaLatency(uri, delay, batch)
}

// oneFlush writes the app chunk in one flush into a fresh collection, in
// bucket and flat mode, through the sink and through the plugin.
func oneFlush(uri string) error {
	w := workloads[0]
	chunk, err := os.ReadFile(w.file)
	if err != nil {
		return err
	}
	fmt.Printf("\nEnd to end, %s (5000 records), one flush into a fresh collection; the test server's\n", w.name)
	fmt.Println("speed says nothing about MongoDB's, the counts carry over:")
	fmt.Printf("%-7s %-9s %12s %6s %9s %12s %12s %9s %10s %12s\n", "mode", "via", "records/s", "docs", "commands", "bytes sent", "entry bytes", "sent/entry", "idx entries", "bookkeeping")
	got := map[model.Mode]stored{}
	sent := map[model.Mode]int64{}
	for _, mode := range []model.Mode{model.ModeBucket, model.ModeFlat} {
		var wr wire
		client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(wr.monitor()))
		if err != nil {
			return err
		}
		db := client.Database("bench_" + string(mode))
		_ = db.Drop(context.Background())
		opt, err := sinkOptions(w, mode)
		if err != nil {
			return err
		}
		if err := createIndexes(db, mode); err != nil {
			return err
		}
		s, err := sink.New(opt, writer.MongoStore{DB: db}, writer.DefaultRetry, quiet{})
		if err != nil {
			return err
		}
		wr.commands.Store(0)
		wr.bytes.Store(0)
		start := time.Now()
		if res := s.Flush(context.Background(), w.tag, chunk); res.Status != sink.Done {
			return fmt.Errorf("%s flush: %v", mode, res.Err)
		}
		elapsed := time.Since(start)
		rt, bytes := wr.commands.Load(), wr.bytes.Load()
		st, err := inspect(db, mode)
		if err != nil {
			return err
		}
		got[mode], sent[mode] = st, bytes
		fmt.Printf("%-7s %-9s %12.0f %6d %9d %12d %12d %9.3f %10d %11.1f%%\n", mode, "sink", 5000/elapsed.Seconds(), st.docs, rt, bytes,
			st.entryBytes, float64(bytes)/float64(st.entryBytes), st.docs*st.indexes, 100*st.bookkeeping())
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
		if so := os.Getenv("OUT_MONGODB_SO"); so != "" {
			rate, err := viaHarness(so, uri, string(mode), w)
			if err != nil {
				return err
			}
			fmt.Printf("%-7s %-9s %12.0f\n", mode, "plugin", rate)
		}
	}
	b, f := got[model.ModeBucket], got[model.ModeFlat]
	fmt.Printf("bucket vs flat: %.4fx the documents, %.3fx the bytes sent, %.4fx the index entries\n",
		float64(b.docs)/float64(f.docs), float64(sent[model.ModeBucket])/float64(sent[model.ModeFlat]),
		float64(b.docs*b.indexes)/float64(f.docs*f.indexes))
	return nil
}

// quietSource is a host writing a line every 150 ms with Flush set low:
// 300 one-record chunks into one group (one bucket). It reports what the
// exactly-once bookkeeping costs where it costs most: the ops arrays'
// share of the bucket's bytes, the commands per chunk, and the index
// entries per bucket.
func quietSource(uri string) error {
	const chunks = 300
	var wr wire
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(wr.monitor()))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	db := client.Database("bench_quiet")
	_ = db.Drop(context.Background())
	defer db.Drop(context.Background())
	if err := createIndexes(db, model.ModeBucket); err != nil {
		return err
	}
	opt, err := sinkOptions(workload{tag: "host-a"}, model.ModeBucket)
	if err != nil {
		return err
	}
	s, err := sink.New(opt, writer.MongoStore{DB: db}, writer.DefaultRetry, quiet{})
	if err != nil {
		return err
	}
	at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	wr.commands.Store(0)
	for i := 0; i < chunks; i++ {
		t := at.Add(time.Duration(i) * 150 * time.Millisecond)
		line := fmt.Sprintf("%s host-a app[4242]: GET /api/v1/items/%d 200 17ms", t.Format(time.RFC3339Nano), i)
		chunk, err := msgpackRecord(t, map[string]any{"log": line})
		if err != nil {
			return err
		}
		if res := s.Flush(context.Background(), "host-a", chunk); res.Status != sink.Done {
			return fmt.Errorf("quiet flush %d: %v", i, res.Err)
		}
	}
	cmds := wr.commands.Load()
	st, err := inspect(db, model.ModeBucket)
	if err != nil {
		return err
	}
	fmt.Printf("\nQuiet source: %d one-record chunks into one group, %d bucket(s) of %d entries (%.0f bytes each):\n",
		chunks, st.docs, st.entries, float64(st.entryBytes)/float64(st.entries))
	fmt.Printf("%-12s %12s %12s %12s %12s %18s\n", "commands/chunk", "bucket bytes", "ops bytes", "ops/entry", "bookkeeping", "idx entries/bucket")
	fmt.Printf("%14.2f %12d %12d %12.1f %11.1f%% %18d\n", float64(cmds)/chunks, st.docBytes, st.opsBytes,
		float64(st.opsBytes)/float64(st.entries), 100*st.bookkeeping(), st.indexes)
	return nil
}

// createIndexes creates the indexes the plugin creates for mode.
func createIndexes(db *mongo.Database, mode model.Mode) error {
	keys := bson.D{{Key: "key", Value: 1}, {Key: "start", Value: 1}}
	if mode == model.ModeFlat {
		keys = bson.D{{Key: "tag", Value: 1}, {Key: "ts", Value: 1}}
	}
	k := layout.NewKeeper(context.Background(), db, quiet{}, layout.Limits{})
	return k.Prepare(context.Background(), "logs", layout.Spec{Keys: keys})
}

// inspect counts documents, entries and their bytes, and indexes.
func inspect(db *mongo.Database, mode model.Mode) (stored, error) {
	ctx := context.Background()
	var st stored
	cur, err := db.Collection("logs").Find(ctx, bson.D{})
	if err != nil {
		return st, err
	}
	for cur.Next(ctx) {
		st.docs++
		st.docBytes += len(cur.Current)
		if el, err := cur.Current.LookupErr("ops"); err == nil {
			st.opsBytes += 1 + len("ops") + 1 + len(el.Value)
		}
		if mode == model.ModeFlat {
			st.entries++
			st.entryBytes += len(cur.Current)
			continue
		}
		vals, _ := cur.Current.Lookup("logs").Array().Values()
		for _, v := range vals {
			st.entries++
			st.entryBytes += len(v.Value)
		}
	}
	if err := cur.Err(); err != nil {
		return st, err
	}
	specs, err := db.Collection("logs").Indexes().ListSpecifications(ctx)
	st.indexes = len(specs)
	return st, err
}

// viaHarness flushes the chunk through the real plugin in the host
// harness and returns records per second of the flush call.
func viaHarness(so, uri, mode string, w workload) (float64, error) {
	dir, err := os.MkdirTemp("", "bench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin, err := harness.Build("harness", dir)
	if err != nil {
		return 0, err
	}
	h, err := harness.Start(bin, so)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	db := "bench_plugin_" + mode
	if _, _, err := h.Register(); err != nil {
		return 0, err
	}
	if rc, err := h.Init("b", map[string]string{"uri": uri, "database": db, "mode": mode}); err != nil || rc != harness.FLBOK {
		return 0, fmt.Errorf("init: rc %d %v\n%s", rc, err, h.Stderr())
	}
	start := time.Now()
	if rc, err := h.Flush("b", w.tag, w.file); err != nil || rc != harness.FLBOK {
		return 0, fmt.Errorf("flush: rc %d %v\n%s", rc, err, h.Stderr())
	}
	elapsed := time.Since(start)
	if _, err := h.Exit("b"); err != nil {
		return 0, err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err == nil {
		_ = client.Database(db).Drop(context.Background())
		_ = client.Disconnect(context.Background())
	}
	return 5000 / elapsed.Seconds(), nil
}

// msgpackRecord encodes one Fluent Bit record [[EventTime, {}], body].
func msgpackRecord(t time.Time, body map[string]any) ([]byte, error) {
	ts := []byte{0xd7, 0x00}
	ts = binary.BigEndian.AppendUint32(ts, uint32(t.Unix()))
	ts = binary.BigEndian.AppendUint32(ts, uint32(t.Nanosecond()))
	return msgpack.Marshal([]any{[]any{msgpack.RawMessage(ts), map[string]any{}}, body})
}
