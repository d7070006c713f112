package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/chunks"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/netproxy"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// A server some way off: each fixture is cut into chunks (in order, as
// Fluent Bit would flush them), written into a fresh collection through a
// proxy that delays every server reply, in bucket and flat mode. Each
// chunk's commands are counted with the driver's command monitor; in
// bucket mode they are set beside the formula (formula.go).

// latencyCase is a workload, the records of its fixture written and the
// records per chunk: enough that a chunk fills a group's bucket and opens
// the next.
type latencyCase struct {
	workload
	records, per int
}

// latencyCases are the app fixture, the Apache fixture keyed by tag and
// trace grouping. The test server scans its collection on every bucket
// write (some 100 ms a statement with a few hundred buckets), so trace
// grouping writes 1000 records (200 buckets), not 5000.
var latencyCases = []latencyCase{
	{workloads[0], 5000, 2000},
	{workloads[2], 5000, 2000},
	{workloads[1], 1000, 500},
}

// chunkRun is what one chunk of a run cost.
type chunkRun struct {
	names           map[string]int
	commands        int
	untrusted       int // update replies that did not account for their statements
	statements      int // S, bucket mode only
	formula         int // bucket mode only
	elapsed         time.Duration
	records, groups int
}

// viaLatency runs every latency case in both modes through a proxy in
// front of uri adding delay, and returns the bucket-mode chunks
// written with the writer's state (the second and later) whose commands
// exceed the formula.
func viaLatency(uri string, delay time.Duration, batch int) ([]string, error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, err
	}
	if len(cs.Hosts) != 1 || cs.Scheme != connstring.SchemeMongoDB {
		fmt.Printf("\nThrough a latency proxy: skipped, the server URI names %d hosts (scheme %s); the proxy stands in front of one\n", len(cs.Hosts), cs.Scheme)
		return nil, nil
	}
	fmt.Printf("\nThrough a proxy that delays every server reply by %v, each fixture in chunks, in order, into a fresh\n", delay)
	fmt.Printf("collection (write_batch %d, max_inflight 4); bucket mode's formula = 2 (the look-ups) + the sum over rounds r of\n", batch)
	fmt.Println("ceil(G_r/write_batch), G_r the groups filling r buckets or more, S the update statements the chunk's buckets need,")
	fmt.Println("computed from its records; the check covers chunks after the first:")
	fmt.Printf("%-16s %-7s %14s %10s %9s %15s   %s\n", "fixture", "mode", "records/chunk", "records/s", "ms/chunk", "commands/chunk", "per chunk: commands (formula, S)")
	var over []string
	untrusted := false
	for _, c := range latencyCases {
		for _, mode := range []model.Mode{model.ModeBucket, model.ModeFlat} {
			runs, err := latencyRun(uri, cs.Hosts[0], delay, batch, c, mode)
			if err != nil {
				return nil, fmt.Errorf("%s %s at %v: %w", c.name, mode, delay, err)
			}
			untrusted = printLatencyRow(c, mode, runs) || untrusted
			over = append(over, overFormula(c.workload, mode, delay, batch, runs)...)
		}
	}
	if untrusted {
		fmt.Println("* an update reply did not account for each statement once: the writer sent statements again")
		fmt.Println("  alone; such chunks are not checked")
	}
	return over, nil
}

// latencyRun writes c's chunks in mode through a proxy in front of host
// adding delay, into a fresh database.
func latencyRun(uri, host string, delay time.Duration, batch int, c latencyCase, mode model.Mode) ([]chunkRun, error) {
	parts, err := c.chunks()
	if err != nil {
		return nil, err
	}
	proxy, err := netproxy.StartLatency(host, delay)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	cc := newCommandCounter()
	client, err := mongo.Connect(options.Client().ApplyURI(strings.Replace(uri, host, proxy.Addr(), 1)).
		SetDirect(true).SetMonitor(cc.monitor()))
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(context.Background())
	db := client.Database(fmt.Sprintf("bench_latency_%s_%s", strings.ReplaceAll(c.name, "-", "_"), mode))
	_ = db.Drop(context.Background())
	defer db.Drop(context.Background())
	if err := createIndexes(db, mode); err != nil {
		return nil, err
	}
	opt, err := sinkOptions(c.workload, mode)
	if err != nil {
		return nil, err
	}
	opt.WriteBatch = batch
	s, err := sink.New(opt, writer.MongoStore{DB: db}, writer.DefaultRetry, quiet{})
	if err != nil {
		return nil, err
	}
	var plan *planner
	if mode == model.ModeBucket {
		if plan, err = newPlanner(opt); err != nil {
			return nil, err
		}
	}
	warmPool(client, opt.MaxInflight)
	var runs []chunkRun
	for i, part := range parts {
		var r chunkRun
		if plan != nil {
			r.statements, r.groups = plan.statements(c.tag, part)
			r.formula = plan.formula(r.statements, batch)
		}
		cc.take()
		start := time.Now()
		res := s.Flush(context.Background(), c.tag, part)
		r.elapsed = time.Since(start)
		if res.Status != sink.Done {
			return nil, fmt.Errorf("chunk %d: %v", i+1, res.Err)
		}
		r.names, r.commands, r.untrusted = cc.take()
		r.records = res.Records
		runs = append(runs, r)
	}
	return runs, nil
}

// chunks is the first c.records records of c's fixture, c.per to a chunk.
func (c latencyCase) chunks() ([][]byte, error) {
	chunk, err := c.chunk()
	if err != nil {
		return nil, err
	}
	head, err := chunks.Split(chunk, c.records)
	if err != nil {
		return nil, err
	}
	return chunks.Split(head[0], c.per)
}

// warmPool opens n connections, so that no chunk pays for their set-up.
func warmPool(client *mongo.Client, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); _ = client.Ping(context.Background(), nil) }()
	}
	wg.Wait()
}

// printLatencyRow prints one run and reports whether a chunk of it had a
// reply that did not account for its statements.
func printLatencyRow(c latencyCase, mode model.Mode, runs []chunkRun) (untrusted bool) {
	var records, commands int
	var elapsed time.Duration
	var each []string
	for _, r := range runs {
		records += r.records
		commands += r.commands
		elapsed += r.elapsed
		mark := ""
		if r.untrusted > 0 {
			mark, untrusted = "*", true
		}
		if mode == model.ModeBucket {
			each = append(each, fmt.Sprintf("%d%s (%d, S=%d)", r.commands, mark, r.formula, r.statements))
		} else {
			each = append(each, fmt.Sprint(r.commands, mark))
		}
	}
	n := float64(len(runs))
	fmt.Printf("%-16s %-7s %14d %10.0f %9.0f %15.2f   %s\n", c.name, mode, c.per, float64(records)/elapsed.Seconds(),
		float64(elapsed.Milliseconds())/n, float64(commands)/n, strings.Join(each, "  "))
	return untrusted
}

// overFormula names the bucket-mode chunks after the first whose commands
// exceed the formula, of those whose replies accounted for every statement.
func overFormula(w workload, mode model.Mode, delay time.Duration, batch int, runs []chunkRun) []string {
	if mode != model.ModeBucket {
		return nil
	}
	var over []string
	for i, r := range runs {
		if i == 0 || r.untrusted > 0 || r.commands <= r.formula {
			continue
		}
		var names []string
		for _, name := range slices.Sorted(maps.Keys(r.names)) {
			names = append(names, fmt.Sprintf("%s %d", name, r.names[name]))
		}
		over = append(over, fmt.Sprintf("%s at %v, chunk %d of %d (%d records in %d groups): %d commands (%s), formula %d = 1 lookup + ceil(%d statements / write_batch %d)",
			w.name, delay, i+1, len(runs), r.records, r.groups, r.commands, strings.Join(names, ", "), r.formula, r.statements, batch))
	}
	return over
}
