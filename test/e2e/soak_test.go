package e2e

// make soak: sustained chunks through the real plugin in the host harness
// while the test server is restarted and a TCP proxy between them cuts the
// connections at random. Every record must end stored exactly once, and
// the host's memory must stay flat.

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// cutter is a TCP proxy that can cut every connection through it, and
// refuse new ones while blocked.
type cutter struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	conns   map[net.Conn]bool
	blocked bool
}

// block cuts every connection and refuses new ones until unblock: to the
// plugin, the server is gone.
func (c *cutter) block() {
	c.mu.Lock()
	c.blocked = true
	c.mu.Unlock()
	c.cut()
}

func (c *cutter) unblock() {
	c.mu.Lock()
	c.blocked = false
	c.mu.Unlock()
}

// uri is the connection string of the server through the proxy.
func (c *cutter) uri() string { return "mongodb://" + c.ln.Addr().String() + "/" }

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go c.accept()
	t.Cleanup(func() { ln.Close(); c.cut() })
	return c
}

func (c *cutter) accept() {
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		go c.pipe(in)
	}
}

func (c *cutter) pipe(in net.Conn) {
	c.mu.Lock()
	blocked := c.blocked
	c.mu.Unlock()
	if blocked {
		in.Close()
		return
	}
	out, err := net.DialTimeout("tcp", c.target, 5*time.Second)
	if err != nil {
		in.Close()
		return
	}
	c.mu.Lock()
	c.conns[in], c.conns[out] = true, true
	c.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(out, in); done <- struct{}{} }()
	go func() { io.Copy(in, out); done <- struct{}{} }()
	<-done
	in.Close()
	out.Close()
	c.mu.Lock()
	delete(c.conns, in)
	delete(c.conns, out)
	c.mu.Unlock()
}

// cut closes every connection through the proxy.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		conn.Close()
	}
}

// rss is the resident memory of process pid in KiB.
func rss(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func TestSoak(t *testing.T) {
	length, err := time.ParseDuration(os.Getenv("SOAK"))
	if err != nil || length <= 0 {
		t.Skip("SOAK is not set to a duration: make soak runs this (SOAK=2m by default)")
	}
	// warmUp chunks are flushed before the memory at start is read.
	const perChunk, workers, warmUp = 1000, 2, 4
	e := newEnv(t)
	proxy := newCutter(t, upstream(t, e))
	e.init("soak", e.props("uri", "mongodb://"+proxy.ln.Addr().String()+"/", "bucket_key", "host",
		"stats", "cost", "count_by", "level", "flush_timeout", "5s", "connect_timeout", "2s", "plugin_log_level", "debug"))

	dir := t.TempDir()
	var ids []string
	chunk := func(k int) string {
		var recs [][]byte
		now := time.Now()
		for i := 0; i < perChunk; i++ {
			id := fmt.Sprintf("%d-%d", k, i)
			ids = append(ids, id)
			recs = append(recs, record(t, now.Add(time.Duration(i)*time.Millisecond), kv{"id", id},
				kv{"host", fmt.Sprintf("h%d", i%4)}, kv{"level", []string{"info", "warn", "error"}[i%3]},
				kv{"cost", i % 500}, kv{"msg", "request handled"}))
		}
		return chunkFile(t, dir, fmt.Sprintf("c%d", k), recs...)
	}

	// Faults: a cut of every connection, or (on the test server) one time
	// in four a restart, every 2 to 6 seconds.
	stop := make(chan struct{})
	faultsDone := make(chan struct{})
	var cuts, restarts int
	go func() {
		defer close(faultsDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2*time.Second + rand.N(4*time.Second)):
			}
			if e.srv.Real || rand.N(4) > 0 {
				proxy.cut()
				cuts++
				continue
			}
			e.srv.Stop()
			time.Sleep(rand.N(time.Second))
			if err := e.srv.Restart(); err != nil {
				t.Errorf("restarting the test server: %v", err)
				return
			}
			restarts++
		}
	}()

	start := time.Now()
	var memStart, chunks, attempts int
	for k := 0; time.Since(start) < length; k += workers {
		files := []string{chunk(k), chunk(k + 1)}
		for len(files) > 0 {
			rcs, err := e.host.FlushConcurrent("soak", "app.log", files)
			if err != nil {
				t.Fatal(err)
			}
			attempts += len(files)
			var again []string
			for i, rc := range rcs {
				switch rc {
				case harness.FLBOK:
					chunks++
				case harness.FLBRetry:
					again = append(again, files[i])
				default:
					t.Fatalf("flush: rc %d\n%s", rc, e.host.Stderr())
				}
			}
			if files = again; len(files) > 0 {
				time.Sleep(200 * time.Millisecond) // Fluent Bit waits before a retry too
			}
		}
		if k == warmUp-workers {
			memStart = rss(t, e.host.Pid())
		}
	}
	elapsed := time.Since(start)
	close(stop)
	<-faultsDone
	memEnd := rss(t, e.host.Pid())
	e.exit("soak")
	if name := os.Getenv("SOAK_LOG"); name != "" {
		if err := os.WriteFile(name, []byte(e.host.Stderr()), 0o644); err != nil {
			t.Error(err)
		}
	}

	count, _ := e.storedIDs("logs")
	parked := e.parkedIDs()
	lost, dup := 0, 0
	for _, id := range ids {
		n := count[id]
		if _, ok := parked[id]; ok {
			n++
		}
		switch {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	if got := len(count) + len(parked); got > len(ids) {
		t.Errorf("%d ids stored or parked, %d sent", got, len(ids))
	}
	t.Logf("soak %v: %d chunks (%d attempts), %d records, %.0f records/s held", elapsed.Round(time.Second), chunks, attempts,
		len(ids), float64(len(ids))/elapsed.Seconds())
	t.Logf("faults: %d connection cuts, %d server restarts", cuts, restarts)
	t.Logf("records lost %d, duplicated %d, parked %d", lost, dup, len(parked))
	t.Logf("host memory (RSS): %d KiB after %d chunks, %d KiB at the end", memStart, warmUp, memEnd)
	if lost > 0 || dup > 0 {
		t.Errorf("%d records lost, %d duplicated", lost, dup)
		e.explainDuplicates(count)
	}
	if len(parked) > 0 {
		t.Errorf("%d records parked: %v", len(parked), parked)
	}
	if cuts+restarts == 0 {
		t.Errorf("no fault was injected")
	}
	if memStart == 0 {
		t.Errorf("SOAK %v ended before the memory at start was read", length)
	} else if memEnd > memStart*3/2+32<<10 {
		t.Errorf("host memory grew from %d KiB to %d KiB", memStart, memEnd)
	}
}

// explainDuplicates logs where the first duplicated records are stored,
// with the op elements of their buckets, and checks every bucket.
func (e *env) explainDuplicates(count map[string]int) {
	docs := e.all("logs")
	checkBuckets(e.t, docs, defaultLimits)
	shown := 0
	for _, d := range docs {
		vals, _ := d.Lookup("logs").Array().Values()
		var at []string
		for i, v := range vals {
			if id := v.Document().Lookup("id").StringValue(); count[id] > 1 {
				at = append(at, fmt.Sprintf("%d:%s", i, id))
			}
		}
		if len(at) == 0 || shown > 8 {
			continue
		}
		shown++
		ops, _ := d.Lookup("ops").Array().Values()
		var elems []string
		for _, o := range ops {
			elems = append(elems, fmt.Sprintf("%08x", uint32(o.Int32())))
		}
		e.t.Logf("bucket %s (count %d) holds duplicated records at %v ... (%d); ops %v",
			d.Lookup("_id").StringValue(), d.Lookup("count").AsInt64(), at[:min(len(at), 3)], len(at), elems)
	}
}
