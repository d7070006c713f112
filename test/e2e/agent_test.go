package e2e

// An agent's identity (agent_id, or the host name, and a slot on the
// host) names every chunk it writes: only a resend of this agent's chunk
// is taken for one. Where agents cannot tell themselves apart, an
// identical chunk of one is taken for the other's resend; agent_id rules
// that out. Where a process gets no slot, its identity is its own and a
// resend after a restart is stored again. README, Delivery semantics,
// lists the same cases.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// agentChunk is 5 records of one integer time, the same bytes on every
// agent.
func agentChunk(t *testing.T) string {
	t.Helper()
	var recs [][]byte
	for i := range 5 {
		recs = append(recs, recordAt(t, int64(1748772000), kv{"id", fmt.Sprintf("r%d", i)}, kv{"msg", "same"}))
	}
	return chunkFile(t, t.TempDir(), "x", recs...)
}

// storedEach wants each of agentChunk's records stored n times.
func storedEach(t *testing.T, e *env, n int, why string) {
	t.Helper()
	count, _ := e.storedIDs("logs")
	for i := range 5 {
		if id := fmt.Sprintf("r%d", i); count[id] != n {
			t.Errorf("%s: %s stored %d times, want %d", why, id, count[id], n)
		}
	}
}

func hostInit(t *testing.T, h *harness.Host, props map[string]string) {
	t.Helper()
	if rc, err := h.Init("a", props); err != nil || rc != harness.FLBOK {
		t.Fatalf("init: rc %d err %v\n%s", rc, err, h.Stderr())
	}
}

func hostFlush(t *testing.T, h *harness.Host, chunk string) {
	t.Helper()
	if rc, err := h.Flush("a", "app", chunk); err != nil || rc != harness.FLBOK {
		t.Fatalf("flush: rc %d err %v\n%s", rc, err, h.Stderr())
	}
}

func hostStop(t *testing.T, h *harness.Host) {
	t.Helper()
	if rc, err := h.Exit("a"); err != nil || rc != harness.FLBOK {
		t.Fatalf("exit: rc %d err %v", rc, err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// agentCases: two agents by the host name alone, where one chunk of the
// bytes of the other's is taken for its resend (stored once), and with an
// agent_id each, where it is not (stored twice).
var agentCases = []struct {
	name   string
	ids    [2]string
	stored int
}{
	{"host name", [2]string{"", ""}, 1},
	{"agent_id", [2]string{"agent-a", "agent-b"}, 2},
}

// agentProps are e's properties for agent i, its agent_id ids[i].
func agentProps(e *env, ids [2]string, i int) map[string]string {
	p := e.props()
	if ids[i] != "" {
		p["agent_id"] = ids[i]
	}
	return p
}

// Two agents of one placement on one host, A in slot 0 and B in slot 1.
// A stores chunk X; both stop and start again, B first: B takes slot 0,
// A's identity, and B's chunk X (new, of the same bytes) is taken for A's
// resend and adds nothing. With agent_id set to one value per agent, it
// is stored.
func TestDeliveryAgentsRestartedInTheOtherOrder(t *testing.T) {
	for _, tc := range agentCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDBEnv(t)
			x := agentChunk(t)
			props := func(i int) map[string]string { return agentProps(e, tc.ids, i) }
			a, b := startHost(t), startHost(t)
			hostInit(t, a, props(0))
			hostInit(t, b, props(1))
			hostFlush(t, a, x)
			hostStop(t, a)
			hostStop(t, b)
			b, a = startHost(t), startHost(t)
			hostInit(t, b, props(1))
			hostInit(t, a, props(0))
			hostFlush(t, b, x)
			hostStop(t, b)
			hostStop(t, a)
			storedEach(t, e, tc.stored, "A's chunk, then B's after both restarted")
		})
	}
}

// Two live agents with one host name whose temporary directories differ
// (containers sharing the host's network, each with its own /tmp): each
// takes slot 0 of its own directory, they share an identity, and B's chunk
// of the bytes A stored is taken for A's resend. With agent_id set to one
// value per agent, both are stored.
func TestDeliveryAgentsApartShareAnIdentity(t *testing.T) {
	for _, tc := range agentCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newDBEnv(t)
			x := agentChunk(t)
			var hosts [2]*harness.Host
			for i := range hosts {
				hosts[i] = startHost(t, "TMPDIR="+t.TempDir())
				hostInit(t, hosts[i], agentProps(e, tc.ids, i))
			}
			hostFlush(t, hosts[0], x)
			hostFlush(t, hosts[1], x)
			for _, h := range hosts {
				hostStop(t, h)
			}
			storedEach(t, e, tc.stored, "one chunk from each agent")
		})
	}
}

// A process that cannot take a slot (its temporary directory unusable)
// warns and writes under an identity of its own: a chunk resent after a
// restart (its acknowledgement lost) is stored again.
func TestDeliveryAgentWithoutASlot(t *testing.T) {
	e := newDBEnv(t)
	x := agentChunk(t)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		h := startHost(t, "TMPDIR="+notDir)
		hostInit(t, h, e.props())
		hostFlush(t, h, x)
		hostStop(t, h) // its log is complete once it has ended
		if log := h.Stderr(); !strings.Contains(log, "an identity of their own") {
			t.Errorf("round %d: no warning about the agent's identity:\n%s", round, log)
		}
	}
	storedEach(t, e, 2, "a chunk and its resend after a restart")
}
