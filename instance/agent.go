package instance

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
)

// An agent's identity goes into the name of every chunk it writes (see
// sink.Options.Agent), so that a chunk another agent stored with the same
// bytes is not taken for this one's resend. It must stay the same across a
// restart, where Fluent Bit resends what was in flight, and differ between
// agents that run at once. It is the agent_id (default: the host name),
// the placement (uri, database, collection, mode) and a slot: the first of
// this host's lock files for them that no live process holds. The kernel
// releases a lock when its process ends, however it ends, so a restarted
// agent takes its slot back while a second live agent on the host takes
// another.

// maxSlots bounds the live instances of one placement on one host.
const maxSlots = 64

// claimAgent returns this instance's identity and the lock file holding
// its slot (nil when none could be taken: the identity is then unique to
// this process, and a resend after a restart is stored again).
func claimAgent(cfg *conf.Config) (string, *os.File, error) {
	agent := cfg.AgentID
	if agent == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", nil, fmt.Errorf("agent_id is not set and the host name is unknown: %v", err)
		}
		agent = host
	}
	h := sha256.Sum256([]byte(agent + "\x00" + cfg.URI + "\x00" + cfg.Database + "\x00" + cfg.Collection + "\x00" + string(cfg.Mode)))
	place := hex.EncodeToString(h[:8])
	lockDir := cfg.LockDir // holds the slots' lock files (lock_dir)
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return unique(agent), nil, fmt.Errorf("cannot create %s for the agent's slot: %v", lockDir, err)
	}
	for n := range maxSlots {
		path := filepath.Join(lockDir, place+"-"+strconv.Itoa(n)+".lock")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return unique(agent), nil, fmt.Errorf("cannot open %s for the agent's slot: %v", path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return agent + "/" + place + "/" + strconv.Itoa(n), f, nil
	}
	return unique(agent), nil, fmt.Errorf("all %d slots in %s are held by live processes", maxSlots, lockDir)
}

// unique is an identity no other process has.
func unique(agent string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return agent + "/pid" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b)
}
