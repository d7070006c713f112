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
// the placement (uri without its credentials, database, collection, mode)
// and a slot: the first of this host's lock files for them that no live
// process holds. The kernel
// releases a lock when its process ends, however it ends, so a restarted
// agent takes its slot back while a second live agent on the host takes
// another.

// maxSlots bounds the live instances of one placement on one host.
const maxSlots = 64

// lockDir holds the slots' lock files.
var lockDir = filepath.Join(os.TempDir(), "out_mongodb-agents")

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
	place := placement(agent, cfg)
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

// placement is the part of a slot's name that names the agent and where
// it writes: 16 hex digits of a SHA-256 of agent_id, the uri without its
// credentials (see conf.WithoutCredentials), database, collection and
// mode. The name is in a directory listing: it must not let anyone test a
// password guess, so the password is not hashed.
func placement(agent string, cfg *conf.Config) string {
	h := sha256.Sum256([]byte(agent + "\x00" + conf.WithoutCredentials(cfg.URI) + "\x00" + cfg.Database + "\x00" + cfg.Collection + "\x00" + string(cfg.Mode)))
	return hex.EncodeToString(h[:8])
}

// unique is an identity no other process has.
func unique(agent string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return agent + "/pid" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b)
}
