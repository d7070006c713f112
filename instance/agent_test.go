package instance

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Two live instances of one placement take two slots; the slot of one that
// stopped is taken again by the next; another placement or agent_id is
// another identity.
func TestClaimAgentSlots(t *testing.T) {
	old := lockDir
	lockDir = t.TempDir()
	t.Cleanup(func() { lockDir = old })
	cfg := &conf.Config{AgentID: "node-1", URI: "mongodb://db/", Database: "logs", Collection: "app", Mode: model.ModeBucket}
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

// useLockDir points lockDir at dir for the test.
func useLockDir(t *testing.T, dir string) {
	old := lockDir
	lockDir = dir
	t.Cleanup(func() { lockDir = old })
}

var slotCfg = &conf.Config{AgentID: "node-1", URI: "mongodb://db/", Database: "logs", Collection: "app", Mode: model.ModeBucket}

// The slot's name does not hash the password: two uris differing only
// in it give one name, which anyone can list without learning anything to
// test a password guess against. A uri without credentials keeps the name
// earlier releases gave it.
func TestClaimAgentNameWithoutPassword(t *testing.T) {
	useLockDir(t, t.TempDir())
	name := func(uri string) string {
		c := *slotCfg
		c.URI = uri
		id, f, err := claimAgent(&c)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		return id
	}
	a := name("mongodb://fbuser:first-password@db1:27017,db2:27017/?replicaSet=rs0")
	b := name("mongodb://fbuser:second-password@db1:27017,db2:27017/?replicaSet=rs0")
	plain := name("mongodb://db1:27017,db2:27017/?replicaSet=rs0")
	if a != b || a != plain {
		t.Errorf("identities %q, %q and %q differ by the credentials alone", a, b, plain)
	}
	if other := name("mongodb://fbuser:first-password@db3:27017/?replicaSet=rs0"); other == a {
		t.Errorf("another host gave the same identity %q", other)
	}
	h := sha256.Sum256([]byte("node-1\x00mongodb://db/\x00logs\x00app\x00" + string(model.ModeBucket)))
	if id := name("mongodb://db/"); id != "node-1/"+hex.EncodeToString(h[:8])+"/0" {
		t.Errorf("identity %q changed from the earlier releases' node-1/%x/0", id, h[:8])
	}
}
