package e2e

// Writes held by the network and delivered late, through the real plugin:
// a proxy swallows chosen wire messages (the plugin learns no outcome) and
// delivers them after later attempts of the chunk, or after a restart,
// have written. Of a late write and the write that repeats it, only one
// may apply: every record is stored once.

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/netproxy"
)

// holdFor is a Hold proxy in front of e's server (see upstream).
func holdFor(t *testing.T, e *env) *netproxy.Hold {
	t.Helper()
	h, err := netproxy.StartHold(upstream(t, e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// upstream is the host:port the proxies a test puts between the plugin and
// e's server forward to. Those tests deliver writes late or cut them, and
// some have two agents write the same buckets at once: on the in-process
// FerretDB, which loses concurrent updates of one document, that is a
// Serial proxy in front of it, so that writes reach it one command at a
// time (MongoDB applies each update to its document atomically on its
// own), one proxy for all of e's agents; a server given by MONGO_URI gets
// them as sent.
func upstream(t *testing.T, e *env) string {
	t.Helper()
	host := e.srv.Host()
	if e.srv.Real {
		return host
	}
	if e.serial == "" {
		s, err := netproxy.StartSerial(host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		e.serial = s.Addr()
	}
	return e.serial
}

// updatesOf picks the update commands that carry one of marks.
func updatesOf(marks ...string) func([]byte) bool {
	return func(msg []byte) bool {
		if !bytes.Contains(msg, []byte("\x02update\x00")) {
			return false
		}
		for _, m := range marks {
			if bytes.Contains(msg, []byte(m)) {
				return true
			}
		}
		return false
	}
}

// finds picks every find command.
func finds(msg []byte) bool { return bytes.Contains(msg, []byte("\x02find\x00")) }

// heldSetup: buckets of 10 entries, one statement a command. Chunk P puts
// p0-p4 in bucket 0; chunk C (c0-c9) then plans a top-up of bucket 0 with
// c0-c4 and bucket 1 with c5-c9, sent as two commands.
func heldSetup(t *testing.T, e *env, uri string) (props map[string]string, p, c string) {
	t.Helper()
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var ps, cs [][]byte
	for i := range 5 {
		ps = append(ps, idRecord(t, at, fmt.Sprintf("p%d", i), 20))
	}
	for i := range 10 {
		cs = append(cs, record(t, at, kv{"id", fmt.Sprintf("c%d", i)}, kv{"msg", fmt.Sprintf("mark-c%d", i)}))
	}
	dir := t.TempDir()
	props = e.props("uri", uri, "bucket_max_records", "10", "write_batch", "1",
		"flush_timeout", "3s", "connect_timeout", "2s")
	return props, chunkFile(t, dir, "p", ps...), chunkFile(t, dir, "c", cs...)
}

// wantOnce checks that p0-p4 and c0-c9 are each stored once.
func wantOnce(t *testing.T, e *env) {
	t.Helper()
	count, _ := e.storedIDs("logs")
	n := 0
	for id, k := range count {
		n += k
		if k != 1 {
			t.Errorf("%s stored %d times", id, k)
		}
	}
	if n != 15 || len(count) != 15 {
		t.Errorf("%d entries of %d records, want 15 of 15: %v", n, len(count), count)
	}
}

// retried flushes c and wants FLB_RETRY.
func retried(t *testing.T, e *env, c, why string) {
	t.Helper()
	if rc := e.flush("a", "app", c); rc != harness.FLBRetry {
		t.Fatalf("%s: rc %d, want FLB_RETRY\n%s", why, rc, e.host.Stderr())
	}
}

// Chunk C's first attempt: the top-up of bucket 0 is held, bucket 1 is
// written. Its second attempt fails at the lookup (every find is held) and
// learns nothing; the third completes C. Then the held top-up arrives: it
// must not apply, as the third attempt wrote c0-c4 at the position it
// named (held finds are dropped: they change nothing).
func TestHeldWriteOutlivesAFailedAttempt(t *testing.T) {
	e := newEnv(t)
	hold := holdFor(t, e)
	props, p, c := heldSetup(t, e, "mongodb://"+hold.Addr()+"/")
	e.init("a", props)
	e.mustFlush("a", "app", p)
	hold.Arm(updatesOf("mark-c0"))
	retried(t, e, c, "the top-up held")
	if hold.Held() == 0 {
		t.Fatal("no write was held")
	}
	writes := hold.Held()
	hold.Arm(finds)
	retried(t, e, c, "the lookup held")
	// The lookup's finds are held behind the top-up: keep the top-up only.
	hold.Disarm()
	e.mustFlush("a", "app", c)
	if err := hold.Release(); err != nil {
		t.Fatalf("delivering %d held messages (%d writes first): %v", hold.Held(), writes, err)
	}
	e.exit("a")
	wantOnce(t, e)
}

// Process A's top-up of bucket 0 is held (and, in the second case, its
// write of bucket 1 too); A stops with C unfinished; process B resends C
// and completes it; then A's held writes arrive. B must write C's records
// at the positions A's could take, so that A's cannot apply after.
func TestHeldWriteOutlivesItsProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		marks []string
	}{
		{"top-up held, new bucket written", []string{"mark-c0"}},
		{"both held", []string{"mark-c0", "mark-c5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			hold := holdFor(t, e)
			props, p, c := heldSetup(t, e, "mongodb://"+hold.Addr()+"/")
			e.init("a", props)
			e.mustFlush("a", "app", p)
			hold.Arm(updatesOf(tc.marks...))
			retried(t, e, c, "writes held")
			hold.Disarm()
			e.exit("a")
			e.restartHost()
			e.init("a", props)
			e.mustFlush("a", "app", c)
			if err := hold.Release(); err != nil {
				t.Fatal(err)
			}
			e.exit("a")
			wantOnce(t, e)
		})
	}
}
