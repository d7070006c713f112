package sim

import (
	"flag"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	seeds = flag.Int("sim.seeds", 0, "seeded runs of TestSimulate (0: the short budget)")
	from  = flag.Uint64("sim.from", 1, "the first seed of TestSimulate")
	only  = flag.Int64("sim.seed", -1, "replay this seed alone and print its trace")
)

// shortBudget is the seeded runs of TestSimulate in make test.
const shortBudget = 2000

// TestSimulate runs the simulation for a range of seeds and fails with the
// first broken promise found, its seed, the command replaying it and its
// trace.
func TestSimulate(t *testing.T) {
	if *only >= 0 {
		res := runSeed(t, uint64(*only))
		for _, l := range res.Trace {
			t.Log(l)
		}
		report(t, []Result{res})
		if res.Failure != nil {
			t.Fatalf("seed %d: %v", res.Seed, res.Failure)
		}
		return
	}
	n := *seeds
	if n == 0 {
		n = shortBudget
		if raceOn {
			n = shortBudget / 20 // the race detector runs them about 10 times slower
		}
	}
	start := time.Now()
	results := make([]Result, n)
	shards := runtime.GOMAXPROCS(0)
	t.Run("runs", func(t *testing.T) {
		for s := range shards {
			t.Run(fmt.Sprint(s), func(t *testing.T) {
				t.Parallel()
				for i := s; i < n; i += shards {
					results[i] = runSeed(t, *from+uint64(i))
				}
			})
		}
	})
	elapsed := time.Since(start)
	t.Logf("%d runs in %s: %.1f runs/s", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	report(t, results)
	var failed []Result
	for _, res := range results {
		if res.Failure != nil {
			failed = append(failed, res)
		}
	}
	for i, res := range failed {
		if i == 400 {
			t.Logf("... %d more failed", len(failed)-i)
			break
		}
		first, _, _ := strings.Cut(res.Failure.Error(), "\n")
		t.Logf("seed %d (%s): %s", res.Seed, res.Config.Mode, first)
	}
	if len(failed) > 0 {
		fail(t, failed[0])
	}
}

// found are seeds that found a broken promise, each kept once fixed: the
// class of failure it found, and the first seed that showed it.
var found = []struct {
	seed uint64
	what string
}{
	{145, "a top-up upserted a bucket it believed held entries: count 3, 1 entry"},
	{39, "a search for a record the server chokes on never started within a 1 s flush: no end"},
	{22, "a chunk's retry wrote past a bucket its earlier attempt was still inserting: stored twice"},
	{743, "a content answered Done and forgotten, met again, taken for a resend: lost (bucket)"},
	{59, "a content answered Done and forgotten, met again, taken for a resend: lost (flat)"},
	{51, "a record parked while its insert was in the network: stored and parked (flat)"},
	{1888, "a larger write of a record, held, landed after the record was parked: stored and parked"},
	{2027, "a record parked while a write of it was in the network: stored and parked (bucket)"},
	{895, "a record parked after its write in another bucket was in doubt: stored and parked"},
	{4393, "a record of two identical lines parked, a write of its twin held: stored and parked"},
	{7522, "a record parked by an attempt whose memory was then lost, written again: stored and parked"},
	{31861, "a look took a late write of one of three identical records for a parked one's: stored and parked"},
	{45947, "an attempt failing before it read the memo forgot a park whose dead letter was on its way: stored and parked"},
	{92576, "a park forgotten with the memo (one unfinished chunk kept), its dead letter on its way: stored and parked"},
	{75350, "a dead letter on its way while a later attempt wrote the record again: stored and parked"},
	{79090, "a dead letter on its way while a later attempt of an identical chunk wrote the record: stored and parked"},
	{212511, "a retry fenced a group it did not know, then read the newest bucket past its own late insert: stored twice"},
	{12, "id_action replace: a replacement held in the network landed after a newer one was answered Done: back in time"},
	{20, "id_action replace: a record parked while its replacement was in the network: stored and parked"},
	{152, "id_action replace: the last record of an id parked, a retry wrote the one before it"},
	{1101, "id_action replace: a fence raised another content to the attempt's version, its own write then taken as applied: lost"},
	{2136, "id_action replace: a fence's raised version taken for a newer sender's: the version before the parked one lost"},
}

// TestSimulateFound replays the seeds that found broken promises.
func TestSimulateFound(t *testing.T) {
	for _, f := range found {
		if res := runSeed(t, f.seed); res.Failure != nil {
			fail(t, res)
			t.Fatalf("seed %d found %s, and fails again", f.seed, f.what)
		}
	}
}

// runSeed runs seed in a bubble of its own.
func runSeed(t *testing.T, seed uint64) Result {
	var res Result
	synctest.Test(t, func(t *testing.T) { res = Run(seed, nil) })
	return res
}

// report logs what the runs did: faults by kind, windows excluded, and the
// oracle's counts.
func report(t *testing.T, results []Result) {
	faults, excluded := map[string]int{}, map[string]int{}
	var chunks, records, stored, parked, steps, failed int
	for _, r := range results {
		for k, v := range r.Faults {
			faults[k] += v
		}
		for k, v := range r.Excluded {
			excluded[k] += v
		}
		chunks += r.Chunks
		records += r.Records
		stored += r.Stored
		parked += r.Parked
		steps += r.Steps
		if r.Failure != nil {
			failed++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs, %d failed; %d steps; %d chunks answered Done, %d records: %d stored, %d parked\n",
		len(results), failed, steps, chunks, records, stored, parked)
	b.WriteString("faults injected:")
	for _, k := range slices.Sorted(maps.Keys(faults)) {
		fmt.Fprintf(&b, " %s %d,", k, faults[k])
	}
	b.WriteString("\nwindows excluded:")
	for _, k := range slices.Sorted(maps.Keys(excluded)) {
		fmt.Fprintf(&b, " %s %d,", k, excluded[k])
	}
	t.Log(b.String())
}

// fail reports a failed run: what broke, how to replay it, its trace.
func fail(t *testing.T, res Result) {
	t.Helper()
	trace := res.Trace
	if len(trace) > 300 {
		trace = append([]string{fmt.Sprintf("... %d lines before", len(trace)-300)}, trace[len(trace)-300:]...)
	}
	t.Errorf("seed %d broke the promise:\n%v\nconfig: %s\nreplay: go test ./sim -run 'TestSimulate$' -sim.seed=%d\ntrace (the end):\n%s",
		res.Seed, res.Failure, res.Config, res.Seed, strings.Join(trace, "\n"))
}

// A run is decided by its seed: run twice, a seed gives the same trace,
// line for line, and the same verdict.
func TestSimulateReplays(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		a, b := runSeed(t, seed), runSeed(t, seed)
		if fmt.Sprint(a.Failure) != fmt.Sprint(b.Failure) {
			t.Fatalf("seed %d: verdicts %v and %v", seed, a.Failure, b.Failure)
		}
		for i := range max(len(a.Trace), len(b.Trace)) {
			if i >= len(a.Trace) || i >= len(b.Trace) || a.Trace[i] != b.Trace[i] {
				t.Fatalf("seed %d: the traces part at line %d:\n%s\n%s", seed, i, at(a.Trace, i), at(b.Trace, i))
			}
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}
