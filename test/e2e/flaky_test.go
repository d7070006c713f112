package e2e

// A flaky network is not poison. Some MongoDB-compatible servers close the
// connection on values they do not support, so a record the server keeps
// dropping the connection on is parked; but a network that drops
// connections (load balancer resets, failovers) drops them on healthy
// records too. A record is parked only on strong evidence, never when it
// is stored already, and under a flaky network healthy records are
// retried, never parked.

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// modeSinkOptions are sinkOptions of 1000 records and 64 KiB per bucket, in
// mode (bucket or flat).
func modeSinkOptions(mode string) sink.Options {
	opt := sinkOptions(1000, 64<<10)
	if mode == "flat" {
		opt.Mode = model.ModeFlat
	}
	return opt
}

// A one-record chunk whose first write applies with its reply lost, and
// whose repeats all lose their connection while the server answers other
// commands: the flush finds the record stored and does not park it.
func TestFaultsLoneRecordStoredThenDropped(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			opt := modeSinkOptions(mode)
			fs := &faultStore{Store: e.store(), failAt: 1, err: errNetwork, apply: true, times: 50}
			s := e.newSink(opt, fs, fastRetry)
			res := flushSink(t, s, "app", idRecord(t, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), "R", 100), sink.Done)
			if res.Parked != 0 {
				t.Errorf("%d parked", res.Parked)
			}
			count, _ := e.storedIDs("logs")
			checkOnce(t, count, "R")
			if n := len(e.all("logs_dead")); n != 0 {
				t.Errorf("%d dead letters, want none", n)
			}
		})
	}
}

// Every write of a one-record chunk loses its connection, and so does
// every third read: the evidence never holds, the chunk is retried and
// nothing is parked; once the network heals, the record is stored once.
func TestFaultsLoneRecordOnAFlakyNetwork(t *testing.T) {
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			e := newDBEnv(t)
			opt := modeSinkOptions(mode)
			opt.FlushTimeout = 2 * time.Second
			fs := &faultStore{Store: e.store(), failAt: 1, err: errNetwork, times: 1 << 30, findEvery: 3}
			s := e.newSink(opt, fs, fastRetry)
			rec := idRecord(t, time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), "R", 100)
			flushSink(t, s, "app", rec, sink.Retry)
			if n := len(e.all("logs_dead")); n != 0 {
				t.Fatalf("%d dead letters on a flaky network, want none", n)
			}
			fs.heal()
			fs.mu.Lock()
			fs.findEvery = 0
			fs.mu.Unlock()
			flushSink(t, s, "app", rec, sink.Done)
			count, _ := e.storedIDs("logs")
			checkOnce(t, count, "R")
			if n := len(e.all("logs_dead")); n != 0 {
				t.Errorf("%d dead letters, want none", n)
			}
		})
	}
}

// A quiet source (one-record chunks) through a proxy that cuts every
// connection every 5 to 15 ms, through the real .so: many commands lose
// their connection, every record ends stored once, none parked.
func TestFlakyNetworkQuietSource(t *testing.T) {
	t.Parallel() // waits on lost connections, not the CPU
	const chunks = 10
	for _, mode := range deliveryModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			proxy := proxyFor(t, e)
			e.init("a", e.props("mode", mode, "uri", proxy.uri(), "flush_timeout", "3s", "connect_timeout", "1s"))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(5+rand.IntN(11)) * time.Millisecond):
						proxy.cut()
					}
				}
			}()
			dir := t.TempDir()
			at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
			var ids []string
			retries := 0
			for i := 0; i < chunks; i++ {
				id := fmt.Sprintf("q%02d", i)
				ids = append(ids, id)
				chunk := chunkFile(t, dir, id, idRecord(t, at.Add(time.Duration(i)*time.Second), id, 200))
				for attempt := 0; ; attempt++ {
					if attempt == 100 {
						t.Fatalf("chunk %s: no FLB_OK after %d attempts", id, attempt)
					}
					rc := e.flush("a", "app", chunk)
					if rc == harness.FLBOK {
						break
					}
					if rc != harness.FLBRetry {
						t.Fatalf("chunk %s: rc %d", id, rc)
					}
					retries++
				}
			}
			close(stop)
			wg.Wait()
			e.exit("a")
			t.Logf("%d chunks, %d retries", chunks, retries)
			count, _ := e.storedIDs("logs")
			checkOnce(t, count, ids...)
			if n := len(e.all("logs_dead")); n != 0 {
				t.Errorf("%d healthy records parked on a flaky network", n)
			}
		})
	}
}
