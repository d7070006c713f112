package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// templates are the collection templates measured against the static
// collection: of the tag alone (resolved once per chunk), and of a record
// field (resolved per record; the app fixture has 5 modules).
// The record-field template makes one bucket per module and window, as
// the static collection with bucket_key module does: that row tells the
// template's own cost from that of five times the buckets.
var templates = []struct{ name, collection, key string }{
	{"static", "logs", ""},
	{"$TAG", "logs_$TAG[0]", ""},
	{"static by module", "logs", "module"},
	{"record-field", "app_$module", ""},
}

// templateRounds is how many times each template row is measured.
const templateRounds = 7

// median is the middle of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// withTemplate is opt writing to the collection template src, at most
// limit targets.
func withTemplate(opt sink.Options, src string, limit int) (sink.Options, error) {
	coll, err := naming.Parse(src)
	if err != nil || coll.Static() {
		return opt, err
	}
	db, _ := naming.ParseDatabase("fluentbit")
	opt.Targets = &sink.Targets{Target: naming.Pair{Database: db, Collection: coll}, DeadLetter: coll, Limit: limit, Overflow: "other"}
	return opt, nil
}

// targetRows measures transcode with each template side by side, then the
// commands one chunk of app-json costs when its records go to one target
// per module.
func targetRows() error {
	w := workloads[0]
	chunk, err := w.chunk()
	if err != nil {
		return err
	}
	n, err := parser.CountRecords(chunk)
	if err != nil {
		return err
	}
	opts := make([]sink.Options, len(templates))
	for i, tm := range templates {
		if opts[i], err = sinkOptions(w, model.ModeBucket); err != nil {
			return err
		}
		if opts[i], err = withTemplate(opts[i], tm.collection, 1000); err != nil {
			return err
		}
		if tm.key != "" {
			opts[i].Grouper.KeyPaths = []string{tm.key}
		}
	}
	// The rows run in turn, round after round, and each reports its
	// median: a noisy second slows every row alike, not the one that
	// happened to run in it.
	rates := make([][]float64, len(templates))
	allocs := make([]float64, len(templates))
	for range templateRounds {
		for i := range templates {
			r := testing.Benchmark(func(b *testing.B) { transcode(b, opts[i], w.tag, chunk) })
			rates[i] = append(rates[i], rate(r, n))
			allocs[i] = float64(r.AllocsPerOp()) / float64(n)
		}
	}
	fmt.Printf("\nTargets from the record: transcode of app-json by collection template, the rows in turn, median of %d rounds:\n", templateRounds)
	fmt.Printf("%-17s %-14s %-12s %12s %11s %10s %16s\n", "template", "collection", "bucket_key", "records/s", "allocs/rec", "vs static", "vs same buckets")
	var static, same float64
	for i, tm := range templates {
		rt := median(rates[i])
		if static == 0 {
			static = rt
		}
		if tm.key != "" || same == 0 {
			same = rt
		}
		fmt.Printf("%-17s %-14s %-12s %12.0f %11.2f %9.1f%% %15.1f%%\n", tm.name, tm.collection, tm.key, rt,
			allocs[i], 100*(rt/static-1), 100*(rt/same-1))
	}
	return targetCommands(w, chunk)
}

// perTarget counts the commands and update statements sent to each
// collection.
type perTarget struct {
	nullStore
	mu         sync.Mutex
	commands   int
	statements map[string]int
}

func (p *perTarget) Upserts(_ context.Context, coll string, ups []writer.Upsert) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commands++
	p.statements[coll] += len(ups)
	return make([]error, len(ups))
}

func (p *perTarget) Find(context.Context, string, bson.Raw, writer.Query) ([]bson.Raw, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commands++
	return nil, nil
}

// targetCommands prints the commands of one chunk whose records go to T
// targets beside the formula: per target one lookup and ceil(S_t /
// write_batch) updates, S_t the statements its buckets need. The second
// template names a target per value of cost (some 2000 values), bounded by
// target_limit 50: 50 targets and the overflow target.
func targetCommands(w workload, chunk []byte) error {
	fmt.Println("\nCommands per chunk by collection template (bucket mode, empty collections): per target t, 1 lookup + ceil(S_t/write_batch);")
	fmt.Println("S_t is the update statements sent to target t:")
	fmt.Printf("%-14s %12s %12s %8s %11s %15s %8s\n", "collection", "target_limit", "write_batch", "targets", "statements", "commands/chunk", "formula")
	for _, tm := range []struct {
		src   string
		limit int
	}{{"app_$module", 1000}, {"c_$cost", 50}} {
		for _, batch := range []int{1, 20, 100} {
			opt, err := sinkOptions(w, model.ModeBucket)
			if err != nil {
				return err
			}
			opt.WriteBatch = batch
			if opt, err = withTemplate(opt, tm.src, tm.limit); err != nil {
				return err
			}
			store := &perTarget{statements: map[string]int{}}
			s, err := sink.New(opt, store, writer.DefaultRetry, quiet{})
			if err != nil {
				return err
			}
			if res := s.Flush(context.Background(), w.tag, chunk); res.Status != sink.Done {
				return res.Err
			}
			formula, stmts := 0, 0
			for _, st := range store.statements {
				formula += 1 + (st+batch-1)/batch
				stmts += st
			}
			fmt.Printf("%-14s %12d %12d %8d %11d %15d %8d\n", tm.src, tm.limit, batch, len(store.statements), stmts, store.commands, formula)
			if store.commands > formula {
				return fmt.Errorf("%s, write_batch %d: %d commands, more than the formula's %d", tm.src, batch, store.commands, formula)
			}
		}
	}
	return nil
}
