package e2e

// Identical chunks are not resends. Fluent Bit never resends a chunk it was
// answered FLB_OK for, so a chunk whose bytes equal an acknowledged one is
// new (a line repeated within the resolution of its time: health checks,
// retry loops, second-resolution timestamps): each one answered FLB_OK is
// stored, its parked records parked, once more. Only a flush of content
// whose last answer was FLB_RETRY, or the first of a content after a
// restart, is a resend.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// deadCount counts the dead letters of coll whose reason holds reason.
func (e *env) deadCount(coll, reason string) int {
	e.t.Helper()
	n := 0
	for _, d := range e.all(coll) {
		if strings.Contains(d.Lookup("reason").StringValue(), reason) {
			n++
		}
	}
	return n
}

// A one-record chunk, and a chunk of a small record and one that cannot be
// stored (too big for a bucket; a time in nanoseconds sent as seconds),
// each flushed three times and answered FLB_OK each time: three copies of
// every record, stored or parked.
func TestDeliveryIdenticalChunks(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
			one := chunkFile(t, dir, "one", idRecord(t, at, "H", 50))
			// 2025-06-01 in nanoseconds, sent as seconds.
			recs := [][]byte{idRecord(t, at, "S", 50), recordAt(t, int64(1748736000000000000), kv{"id", "W"})}
			bad := "time out of range"
			if mode == "bucket" {
				recs = append(recs, idRecord(t, at, "BIG", 70000))
			}
			mixed := chunkFile(t, dir, "mixed", recs...)
			e.init("a", e.modeProps(mode, "bucket_max_bytes", "64K", "ttl", "1d"))
			for i := 0; i < 3; i++ {
				e.mustFlush("a", "app", one)
				e.mustFlush("a", "app", mixed)
			}
			e.exit("a")
			count, _ := e.storedIDs("logs")
			if count["H"] != 3 || count["S"] != 3 || len(count) != 2 {
				t.Errorf("stored %v, want H and S 3 times each", count)
			}
			if n := e.deadCount("logs_dead", bad); n != 3 {
				t.Errorf("%d dead letters %q, want 3", n, bad)
			}
			if mode == "bucket" {
				if n := e.deadCount("logs_dead", "exceeds the"); n != 3 {
					t.Errorf("%d dead letters of the big record, want 3", n)
				}
			}
		})
	}
}

// proxyFor is a cutter in front of e's server (see upstream).
func proxyFor(t *testing.T, e *env) *cutter {
	t.Helper()
	return newCutter(t, upstream(t, e))
}

// Chunk X is answered FLB_RETRY (the server is gone); an identical new
// chunk arrives before X is resent, and is stored; X's resend is then new
// content to the plugin and is stored too: two chunks answered FLB_OK, two
// copies. Then two workers flush three identical chunks at once: three more.
func TestDeliveryIdenticalChunkDuringRetry(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			proxy := proxyFor(t, e)
			x := chunkFile(t, t.TempDir(), "x", idRecord(t, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), "X", 50))
			e.init("a", e.props("mode", mode, "uri", proxy.uri(), "flush_timeout", "2s", "connect_timeout", "1s"))
			e.mustFlush("a", "app", x)
			proxy.block()
			if rc := e.flush("a", "app", x); rc != harness.FLBRetry {
				t.Fatalf("flush with the server gone: rc %d, want FLB_RETRY", rc)
			}
			proxy.unblock()
			e.mustFlush("a", "app", x) // the identical new chunk
			e.mustFlush("a", "app", x) // X's resend
			rcs, err := e.host.FlushConcurrent("a", "app", []string{x, x, x})
			if err != nil {
				t.Fatal(err)
			}
			for i, rc := range rcs {
				if rc != harness.FLBOK {
					t.Errorf("concurrent flush %d: rc %d", i, rc)
				}
			}
			e.exit("a")
			if count, _ := e.storedIDs("logs"); count["X"] != 6 {
				t.Errorf("X stored %d times, want 6 (6 chunks answered FLB_OK)", count["X"])
			}
		})
	}
}

// A resend after a restart completes the generation the earlier process
// was writing: three identical chunks acknowledged, the third one's
// acknowledgement lost (the agent restarted): its resend adds nothing, and
// a fourth identical chunk after it is stored.
func TestDeliveryIdenticalChunksAcrossRestart(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			x := chunkFile(t, t.TempDir(), "x", idRecord(t, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), "X", 50))
			props := e.modeProps(mode)
			e.init("a", props)
			for i := 0; i < 3; i++ {
				e.mustFlush("a", "app", x)
			}
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", x) // the third one's resend
			e.mustFlush("a", "app", x) // a new one
			e.exit("a")
			if count, _ := e.storedIDs("logs"); count["X"] != 4 {
				t.Errorf("X stored %d times, want 4", count["X"])
			}
		})
	}
}

// A real Fluent Bit, when one is on PATH, tails a log whose parser reads
// second-resolution times; the same health-check line is appended twice,
// each read in its own flush: both are stored.
func TestRealFluentBitRepeatedLine(t *testing.T) {
	fb, err := exec.LookPath("fluent-bit")
	if err != nil {
		t.Skip("no fluent-bit on PATH; TestDeliveryIdenticalChunks covers the same chunks through the host harness")
	}
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			dir := t.TempDir()
			logFile := filepath.Join(dir, "health.log")
			line := "2025-06-01T10:00:00 GET /health 200\n"
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("health.log", line)
			write("plugins.conf", "[PLUGINS]\n    Path "+soPath+"\n")
			write("parsers.conf", `[PARSER]
    Name        health
    Format      regex
    Regex       ^(?<time>[^ ]+) (?<msg>.*)$
    Time_Key    time
    Time_Format %Y-%m-%dT%H:%M:%S
`)
			write("fluent-bit.conf", `[SERVICE]
    Flush        0.25
    Grace        2
    Log_Level    info
    Plugins_File plugins.conf
    Parsers_File parsers.conf

[INPUT]
    Name             tail
    Path             `+logFile+`
    Tag              health
    Parser           health
    Read_From_Head   On
    Refresh_Interval 1

[OUTPUT]
    Name        mongodb
    Match       health
    Workers     1
    Retry_Limit no_limits
    uri         `+e.srv.URI+`
    database    `+e.dbName+`
    collection  logs
    mode        `+mode+`
    write_batch 20
`)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, fb, "-c", filepath.Join(dir, "fluent-bit.conf"))
			cmd.Dir = dir
			var out harness.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("fluent-bit output:\n%s", out.String())
				}
			}()
			if !e.waitEntries("logs", "GET /health 200", 1) {
				cmd.Process.Kill()
				t.Fatalf("the first line was not stored")
			}
			f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(line); err != nil {
				t.Fatal(err)
			}
			f.Close()
			stored := e.waitEntries("logs", "GET /health 200", 2)
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("fluent-bit: %v", err)
			}
			if !stored {
				t.Errorf("the repeated line was not stored: %d of 2", e.countEntries("logs", "GET /health 200"))
			}
			if n := e.countEntries("logs", "GET /health 200"); n != 2 {
				t.Errorf("%d lines stored, want 2", n)
			}
		})
	}
}

// countEntries counts the records of coll (bucket entries or flat
// documents) whose msg is msg.
func (e *env) countEntries(coll, msg string) int {
	e.t.Helper()
	count, _ := e.storedBy(coll, "msg")
	return count[msg]
}

// waitEntries waits up to 30 s (Flush is 0.25 s) until coll holds want
// records with msg, and reports whether it did.
func (e *env) waitEntries(coll, msg string, want int) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if e.countEntries(coll, msg) >= want {
			return true
		}
	}
	return false
}

// Two live agents on one host, one database, collection and tag, flush a
// chunk of the same bytes (integer times: a forwarder's): both are
// answered FLB_OK, so both copies are stored. Each agent's chunks are named
// with its own identity (a slot on the host no other live process holds),
// so the second agent's chunk is not taken for a resend of the first's.
// Then agent 1 restarts and Fluent Bit resends its chunk (its
// acknowledgement lost): the restarted agent takes its slot back and the
// resend adds nothing; agent 2's next identical chunk is stored.
func TestDeliveryTwoAgentsSameBytes(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			second := startHost(t)
			var recs [][]byte
			for i := range 5 {
				recs = append(recs, recordAt(t, int64(1748772000), kv{"id", fmt.Sprintf("r%d", i)}, kv{"msg", "same"}))
			}
			x := chunkFile(t, t.TempDir(), "x", recs...)
			props := e.modeProps(mode)
			e.init("a", props)
			if rc, err := second.Init("a", props); err != nil || rc != harness.FLBOK {
				t.Fatalf("init on the second host: rc %d err %v", rc, err)
			}
			flush2 := func() {
				t.Helper()
				if rc, err := second.Flush("a", "app", x); err != nil || rc != harness.FLBOK {
					t.Fatalf("flush on the second host: rc %d err %v\n%s", rc, err, second.Stderr())
				}
			}
			want := func(n int, when string) {
				t.Helper()
				count, _ := e.storedIDs("logs")
				for i := range 5 {
					if id := fmt.Sprintf("r%d", i); count[id] != n {
						t.Errorf("%s: %s stored %d times, want %d (%v)", when, id, count[id], n, count)
					}
				}
			}
			e.mustFlush("a", "app", x)
			flush2()
			want(2, "after one chunk from each agent")
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", x) // agent 1's resend
			want(2, "after agent 1's resend")
			flush2()
			want(3, "after agent 2's second chunk")
			e.exit("a")
			if rc, err := second.Exit("a"); err != nil || rc != harness.FLBOK {
				t.Fatalf("exit on the second host: rc %d err %v", rc, err)
			}
		})
	}
}

// Two agents, two workers each, flush identical chunks (20 records of one
// integer time) round after round while the connections of both are cut
// at random; every chunk answered FLB_RETRY is sent again until answered
// FLB_OK, as Fluent Bit does. Each record is then stored exactly as many
// times as FLB_OK was answered, and nothing is parked.
func TestDeliveryTwoAgentsIdenticalChunksChaos(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			const rounds = 3
			e := newEnv(t)
			hosts := []*harness.Host{e.host, startHost(t)}
			var recs [][]byte
			for i := range 20 {
				recs = append(recs, recordAt(t, int64(1748772000), kv{"id", fmt.Sprintf("r%d", i)}, kv{"msg", "same"}))
			}
			x := chunkFile(t, t.TempDir(), "x", recs...)
			proxies := make([]*cutter, len(hosts))
			for i, h := range hosts {
				proxies[i] = proxyFor(t, e)
				props := e.modeProps(mode, "bucket_max_records", "7")
				props["uri"], props["flush_timeout"], props["connect_timeout"] = proxies[i].uri(), "2s", "1s"
				if rc, err := h.Init("a", props); err != nil || rc != harness.FLBOK {
					t.Fatalf("init: rc %d err %v", rc, err)
				}
			}
			stop := make(chan struct{})
			chaos := make(chan struct{})
			go func() {
				defer close(chaos)
				rng := rand.New(rand.NewPCG(1, 2))
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(20+rng.IntN(100)) * time.Millisecond):
						proxies[rng.IntN(len(proxies))].cut()
					}
				}
			}()
			oks, retries := untilOK(t, hosts, rounds, x)
			close(stop)
			<-chaos
			for _, h := range hosts {
				if rc, err := h.Exit("a"); err != nil || rc != harness.FLBOK {
					t.Fatalf("exit: rc %d err %v", rc, err)
				}
			}
			want := oks[0] + oks[1]
			t.Logf("FLB_OK %v, FLB_RETRY %v", oks, retries)
			count, _ := e.storedIDs("logs")
			for i := range 20 {
				if id := fmt.Sprintf("r%d", i); count[id] != want {
					t.Errorf("%s stored %d times, want %d (FLB_OK answered %d + %d times)", id, count[id], want, oks[0], oks[1])
				}
			}
			if dead := e.all("logs_dead"); len(dead) != 0 {
				t.Errorf("%d records parked, want none: %v", len(dead), dead[0])
			}
		})
	}
}

// writes picks every write command.
func writes(msg []byte) bool {
	for _, cmd := range []string{"update", "insert", "findAndModify", "delete"} {
		if bytes.Contains(msg, []byte("\x02"+cmd+"\x00")) {
			return true
		}
	}
	return false
}

// As above, but the network holds one write in four and delivers it late,
// after later attempts of its chunk (or later chunks) wrote: the plugin
// learns no outcome of a held write, and of a late write and the one that
// repeats it only one may apply.
func TestDeliveryTwoAgentsIdenticalChunksHeldWrites(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			const rounds = 3
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			e := newEnv(t)
			hosts := []*harness.Host{e.host, startHost(t)}
			var recs [][]byte
			for i := range 20 {
				recs = append(recs, recordAt(t, int64(1748772000), kv{"id", fmt.Sprintf("r%d", i)}, kv{"msg", "same"}))
			}
			x := chunkFile(t, t.TempDir(), "x", recs...)
			hold := holdFor(t, e)
			rng := rand.New(rand.NewPCG(seed, 7)) // used by pick, under the proxy's lock
			hold.Arm(func(msg []byte) bool { return writes(msg) && rng.IntN(4) == 0 })
			for _, h := range hosts {
				props := e.modeProps(mode, "bucket_max_records", "7", "write_batch", "2")
				props["uri"], props["flush_timeout"], props["connect_timeout"] = "mongodb://"+hold.Addr()+"/", "2s", "1s"
				if rc, err := h.Init("a", props); err != nil || rc != harness.FLBOK {
					t.Fatalf("init: rc %d err %v", rc, err)
				}
			}
			stop := make(chan struct{})
			released := make(chan int)
			go func() {
				n := 0
				defer func() { released <- n }()
				for {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
						if k := hold.Held(); k > 0 && hold.Release() == nil {
							n += k
						}
					}
				}
			}()
			oks, retries := untilOK(t, hosts, rounds, x)
			close(stop)
			n := <-released
			hold.Disarm()
			if k := hold.Held(); k > 0 {
				if err := hold.Release(); err != nil {
					t.Fatalf("delivering %d held writes: %v", k, err)
				}
				n += k
			}
			for _, h := range hosts {
				if rc, err := h.Exit("a"); err != nil || rc != harness.FLBOK {
					t.Fatalf("exit: rc %d err %v", rc, err)
				}
			}
			want := oks[0] + oks[1]
			t.Logf("FLB_OK %v, FLB_RETRY %v, %d writes held and delivered late", oks, retries, n)
			count, _ := e.storedIDs("logs")
			for i := range 20 {
				if id := fmt.Sprintf("r%d", i); count[id] != want {
					t.Errorf("%s stored %d times, want %d", id, count[id], want)
				}
			}
			if dead := e.all("logs_dead"); len(dead) != 0 {
				t.Errorf("%d records parked, want none: %v", len(dead), dead[0])
			}
		})
	}
}

// untilOK has every host flush chunk x on two workers at once, rounds
// times, each flush answered FLB_RETRY sent again (as Fluent Bit does)
// until answered FLB_OK; it returns the FLB_OK and FLB_RETRY answers by
// host.
func untilOK(t *testing.T, hosts []*harness.Host, rounds int, x string) (oks, retries []int) {
	t.Helper()
	oks, retries = make([]int, len(hosts)), make([]int, len(hosts))
	errs := make(chan error, len(hosts))
	for i, h := range hosts {
		go func() {
			for range rounds {
				rcs, err := h.FlushConcurrent("a", "app", []string{x, x})
				if err != nil {
					errs <- err
					return
				}
				for _, rc := range rcs {
					for tries := 0; rc != harness.FLBOK; tries++ {
						if tries == 100 {
							errs <- fmt.Errorf("host %d: a chunk retried 100 times", i)
							return
						}
						retries[i]++
						if rc, err = h.Flush("a", "app", x); err != nil {
							errs <- err
							return
						}
					}
					oks[i]++
				}
			}
			errs <- nil
		}()
	}
	for range hosts {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	return oks, retries
}
