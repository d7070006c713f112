package instance

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// useLockDir points lockDir at dir for the test.
func useLockDir(t *testing.T, dir string) {
	old := lockDir
	lockDir = dir
	t.Cleanup(func() { lockDir = old })
}

var slotCfg = &conf.Config{AgentID: "node-1", URI: "mongodb://db/", Database: "logs", Collection: "app", Mode: model.ModeBucket}

// The default directory is the user's own under the temporary directory;
// claimAgent creates it 0700 and each slot file 0600.
func TestClaimAgentModes(t *testing.T) {
	if want := filepath.Join(os.TempDir(), "out_mongodb-agents-"+strconv.Itoa(os.Geteuid())); lockDir != want {
		t.Errorf("default lock directory %s, want %s", lockDir, want)
	}
	dir := filepath.Join(t.TempDir(), "agents")
	useLockDir(t, dir)
	old := syscall.Umask(0) // modes must not depend on the umask
	t.Cleanup(func() { syscall.Umask(old) })
	_, f, err := claimAgent(slotCfg)
	if err != nil || f == nil {
		t.Fatalf("claim: %v", err)
	}
	defer f.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %04o, want 0700", fi.Mode().Perm())
	}
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("slot file mode %04o, want 0600", fi.Mode().Perm())
	}
}

// A lock directory that another user could have prepared is refused: a
// symbolic link, one writable by group or others, one of another uid. The
// agent then gets an identity of its own, and nothing is created where the
// link points.
func TestClaimAgentRefusesForeignDir(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(base, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o1777); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(base, "group")
	if err := os.Mkdir(group, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(group, 0o770); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{link: "symbolic link", open: "writable by other users", group: "writable by other users"}
	if os.Geteuid() == 0 {
		foreign := filepath.Join(base, "foreign")
		if err := os.Mkdir(foreign, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[foreign] = "belongs to uid 65534"
	} else {
		t.Log("not root: the directory of another uid is not tried (cannot chown)")
	}
	for dir, why := range cases {
		useLockDir(t, dir)
		id, f, err := claimAgent(slotCfg)
		if f != nil {
			f.Close()
			t.Errorf("%s: a slot was taken", dir)
		}
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: error %v, want one saying it %s", dir, err, why)
		}
		if !strings.HasPrefix(id, "node-1/pid") {
			t.Errorf("%s: identity %q, want one unique to the process", dir, id)
		}
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("files created through the link: %v", ents)
	}
}

// A slot file is never opened through a symbolic link, nor taken when it
// belongs to another user; an own file an older release left 0666 is
// made 0600.
func TestClaimAgentSlotFiles(t *testing.T) {
	dir := t.TempDir()
	useLockDir(t, dir)
	id, f, err := claimAgent(slotCfg)
	if err != nil {
		t.Fatal(err)
	}
	slot0 := f.Name()
	f.Close()
	if err := os.Remove(slot0); err != nil {
		t.Fatal(err)
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(victim, slot0); err != nil {
		t.Fatal(err)
	}
	if _, f, err := claimAgent(slotCfg); f != nil || err == nil || !strings.Contains(err.Error(), "refusing") && !strings.Contains(err.Error(), "cannot open") {
		t.Errorf("slot file a symbolic link: took %v, error %v", f, err)
	}
	if _, err := os.Lstat(victim); !os.IsNotExist(err) {
		t.Errorf("the link's target was created: %v", err)
	}
	os.Remove(slot0)

	if err := os.WriteFile(slot0, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(slot0, 0o666); err != nil {
		t.Fatal(err)
	}
	again, f, err := claimAgent(slotCfg)
	if err != nil || again != id {
		t.Fatalf("own 0666 slot file: %q (%v), want %q", again, err, id)
	}
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("own 0666 slot file left %04o, want 0600", fi.Mode().Perm())
	}
	f.Close()

	if os.Geteuid() != 0 {
		t.Skip("not root: a slot file of another uid cannot be made (chown)")
	}
	if err := os.Chown(slot0, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, f, err := claimAgent(slotCfg); f != nil || err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("slot file of uid 65534: took %v, error %v", f, err)
	}
}

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
