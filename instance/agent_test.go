package instance

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Two live instances of one placement take two slots; the slot of one that
// stopped is taken again by the next; another placement or agent_id is
// another identity.
func TestClaimAgentSlots(t *testing.T) {
	cfg := &conf.Config{AgentID: "node-1", URI: "mongodb://db/", Database: "logs", Collection: "app", Mode: model.ModeBucket,
		LockDir: t.TempDir()}
	a, fa, err := claimAgent(cfg)
	if err != nil || fa == nil {
		t.Fatalf("first claim: %v", err)
	}
	b, fb, err := claimAgent(cfg)
	if err != nil || fb == nil {
		t.Fatalf("second claim: %v", err)
	}
	if a == b || !strings.HasPrefix(a, "node-1/") {
		t.Errorf("two live claims got %q and %q, want two identities of node-1", a, b)
	}
	fa.Close()
	again, f, err := claimAgent(cfg)
	if err != nil || again != a {
		t.Errorf("claim after the first stopped: %q (%v), want its identity %q back", again, err, a)
	}
	f.Close()
	fb.Close()
	other := *cfg
	other.Collection = "audit"
	if id, f, _ := claimAgent(&other); id == a || id == b {
		t.Errorf("another collection got identity %q of the first", id)
	} else {
		f.Close()
	}
	other = *cfg
	other.AgentID = "node-2"
	if id, f, _ := claimAgent(&other); !strings.HasPrefix(id, "node-2/") {
		t.Errorf("agent_id node-2 got identity %q", id)
	} else {
		f.Close()
	}
}

// lock_dir is where the slots' lock files go: a new instance creates the
// folder and takes its slot there.
func TestLockDirConfigured(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	in, err := New(testConfig("lock_dir", dir, "agent_id", "node-9"), "mongodb.0", &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Exit()
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	if len(locks) != 1 {
		t.Errorf("lock files in lock_dir %s: %v, want the one of the instance's slot", dir, locks)
	}
}
