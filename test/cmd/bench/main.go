// Command bench measures the plugin side by side in one run and prints its
// tables: the CPU path per chunk against fluent-bit-go's decoder and a plain
// msgpack skip, the commands per chunk beside the formula the writer
// follows, then end-to-end writes in bucket and flat mode (documents,
// round trips, bytes on the wire, index entries), and chunk after chunk
// through a proxy that delays every server reply. It exits 1 when a chunk
// written with the writer's state costs more commands than the formula.
// Run it with make bench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/fluent/fluent-bit-go/output"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/chunks"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// workload is one fixture and how the plugin is configured for it.
type workload struct {
	name, file, tag string
	line            string // parser for the raw line, if any
	// traces, when above 0, rewrites the fixture's trace ids so that this
	// many consecutive records share one, and groups by trace id without a
	// window (bucket_key traceId, bucket_window 0).
	traces int
}

var workloads = []workload{
	{"app-json", "testdata/chunk-app-json-5000.msgpack", "app.log", "", 0},
	{"trace-grouping", "testdata/chunk-app-json-5000.msgpack", "app.log", "", 5},
	{"apache2", "testdata/chunk-apache2-5000.msgpack", "apache.access", "apache_combined", 0},
	{"raw-access+parser", "testdata/chunk-raw-access-5000.msgpack", "apache.raw", "apache_combined", 0},
}

// chunk reads w's chunk.
func (w workload) chunk() ([]byte, error) {
	data, err := os.ReadFile(w.file)
	if err != nil || w.traces == 0 {
		return data, err
	}
	return chunks.Traces(data, w.traces)
}

func main() {
	e2e := flag.Bool("e2e", true, "also write to the test server (or MONGO_URI)")
	delay := flag.Duration("latency", 20*time.Millisecond, "the delay the latency proxy adds to every server reply")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the transcode path (every fixture) to this file")
	keys := flag.Int("keys", keyCounts[len(keyCounts)-1], "measure chunks of up to this many distinct bucket keys")
	only := flag.Bool("keys-only", false, "measure only the keys table")
	flag.Parse()
	testing.Init()
	if *profile != "" {
		if err := profileTranscode(*profile); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if *only {
		if err := keyRows(*keys); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	over, err := run(*e2e, *delay, *keys)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if len(over) > 0 {
		fmt.Fprintf(os.Stderr, "\nbench: FAIL: %d chunk(s) written with the writer's state cost more commands than the formula\n", len(over))
		fmt.Fprintln(os.Stderr, "(1 lookup + ceil(S/write_batch), S = one update statement per bucket the chunk touches, all sent in one round):")
		for _, o := range over {
			fmt.Fprintln(os.Stderr, "  "+o)
		}
		os.Exit(1)
	}
}

func run(e2e bool, delay time.Duration, keys int) ([]string, error) {
	fmt.Println("CPU per chunk (5000 records), measured side by side in this run:")
	fmt.Printf("%-20s %-22s %14s %12s %10s\n", "fixture", "path", "records/s", "allocs/rec", "B/rec")
	for _, w := range workloads {
		chunk, err := w.chunk()
		if err != nil {
			return nil, err
		}
		n, err := parser.CountRecords(chunk)
		if err != nil {
			return nil, err
		}
		opt, err := sinkOptions(w, model.ModeBucket)
		if err != nil {
			return nil, err
		}
		results := map[string]testing.BenchmarkResult{
			"transcode":            testing.Benchmark(func(b *testing.B) { transcode(b, opt, w.tag, chunk) }),
			"baseline-fluentbitgo": testing.Benchmark(func(b *testing.B) { baseline(b, chunk) }),
			"floor":                testing.Benchmark(func(b *testing.B) { floor(b, chunk) }),
		}
		for _, path := range []string{"transcode", "baseline-fluentbitgo", "floor"} {
			r := results[path]
			fmt.Printf("%-20s %-22s %14.0f %12.2f %10.0f\n", w.name, path, rate(r, n),
				float64(r.AllocsPerOp())/float64(n), float64(r.AllocedBytesPerOp())/float64(n))
		}
		t, bl, fl := rate(results["transcode"], n), rate(results["baseline-fluentbitgo"], n), rate(results["floor"], n)
		fmt.Printf("%-20s transcode is %.1fx the baseline, floor is %.1fx transcode\n", w.name, t/bl, fl/t)
	}
	if err := commandsPerChunk(); err != nil {
		return nil, err
	}
	if err := targetRows(); err != nil {
		return nil, err
	}
	if err := keyRows(keys); err != nil {
		return nil, err
	}
	if !e2e {
		return nil, nil
	}
	return endToEnd(delay)
}

func rate(r testing.BenchmarkResult, records int) float64 {
	return float64(records) * float64(r.N) / r.T.Seconds()
}

// sinkOptions is the plugin's default configuration for w.
func sinkOptions(w workload, mode model.Mode) (sink.Options, error) {
	line, err := parser.NewLineParser(w.line, "")
	if err != nil {
		return sink.Options{}, err
	}
	opt := sink.Options{
		Mode: mode, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", Idempotent: true,
		MaxInflight: 4, WriteBatch: 100, FlushTimeout: time.Minute, MaxRecords: 1000, MaxBytes: 1 << 20,
		Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_", Line: line, ParseKey: "log"},
	}
	if mode == model.ModeBucket {
		opt.Grouper = bucketer.Config{TagKey: "tag", Window: time.Minute, ReplaceDot: "_", ReplaceDollar: "_"}
		if w.traces > 0 {
			opt.Grouper.KeyPaths, opt.Grouper.Window = []string{"traceId"}, 0
		}
	}
	return opt, nil
}

// nullStore accepts every write without I/O, so transcode measures the
// plugin's whole CPU path: decode, parse, group, build every update.
type nullStore struct{}

func (nullStore) Upserts(_ context.Context, _ string, ups []writer.Upsert) []error {
	return make([]error, len(ups))
}
func (nullStore) Find(context.Context, string, bson.Raw, writer.Query) ([]bson.Raw, error) {
	return nil, nil
}
func (nullStore) InsertMany(context.Context, string, []bson.Raw) error         { return nil }
func (nullStore) Replace(context.Context, string, []bson.Raw) error            { return nil }
func (nullStore) Ping(context.Context) error                                   { return nil }
func (nullStore) UpdateMany(context.Context, string, bson.Raw, bson.Raw) error { return nil }

// countingStore is a nullStore that counts the commands a flush sends: one
// per Find, Upserts, InsertMany, Replace or UpdateMany call.
type countingStore struct {
	nullStore
	mu                   sync.Mutex // the writer sends a round's commands at once
	commands, statements int
}

func (c *countingStore) Upserts(_ context.Context, _ string, ups []writer.Upsert) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands++
	c.statements += len(ups)
	return make([]error, len(ups))
}

func (c *countingStore) Find(context.Context, string, bson.Raw, writer.Query) ([]bson.Raw, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands++
	return nil, nil
}

func (c *countingStore) InsertMany(context.Context, string, []bson.Raw) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands++
	return nil
}

func (c *countingStore) UpdateMany(context.Context, string, bson.Raw, bson.Raw) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commands++
	return nil
}

func (c *countingStore) Replace(context.Context, string, []bson.Raw) error {
	c.commands++
	return nil
}

// commandsPerChunk prints the commands one flush of each bucket workload
// sends into an empty collection, by write_batch, beside the formula
// (formula.go): the lookup and ceil(S / write_batch) update commands, S
// computed from the chunk's records.
func commandsPerChunk() error {
	fmt.Println("\nCommands per chunk (bucket mode, into an empty collection; e2e tests count the same with the driver's command monitor);")
	fmt.Println("S is the update statements the chunk's buckets need, computed from its records; formula = 1 (the lookup) + ceil(S/write_batch):")
	fmt.Printf("%-20s %12s %8s %8s %11s %15s %8s\n", "fixture", "write_batch", "groups", "S", "statements", "commands/chunk", "formula")
	for _, w := range workloads[:3] {
		chunk, err := w.chunk()
		if err != nil {
			return err
		}
		for _, batch := range []int{1, 20, 100} {
			opt, err := sinkOptions(w, model.ModeBucket)
			if err != nil {
				return err
			}
			opt.WriteBatch = batch
			plan, err := newPlanner(opt)
			if err != nil {
				return err
			}
			stmts, _ := plan.statements(w.tag, chunk)
			var store countingStore
			s, err := sink.New(opt, &store, writer.DefaultRetry, quiet{})
			if err != nil {
				return err
			}
			res := s.Flush(context.Background(), w.tag, chunk)
			if res.Status != sink.Done {
				return res.Err
			}
			fmt.Printf("%-20s %12d %8d %8d %11d %15d %8d\n", w.name, batch, res.Groups, stmts, store.statements, store.commands,
				plan.formula(stmts, batch))
		}
	}
	return nil
}

type quiet struct{}

func (quiet) Debugf(string, ...any) {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}

// transcode flushes the chunk through one sink, as one plugin instance
// serves every flush.
func transcode(b *testing.B, opt sink.Options, tag string, chunk []byte) {
	s, err := sink.New(opt, nullStore{}, writer.DefaultRetry, quiet{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := s.Flush(context.Background(), tag, chunk); res.Status != sink.Done {
			b.Fatal(res.Err)
		}
	}
}

// baseline is what every other Go output plugin does first: fluent-bit-go's
// decoder, record by record.
func baseline(b *testing.B, chunk []byte) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dec := output.NewDecoder(unsafe.Pointer(&chunk[0]), len(chunk))
		for {
			if ret, _, _ := output.GetRecord(dec); ret != 0 {
				break
			}
		}
	}
}

// floor skips every record without materialising a value.
func floor(b *testing.B, chunk []byte) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := parser.CountRecords(chunk); err != nil {
			b.Fatal(err)
		}
	}
}
