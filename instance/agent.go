package instance

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
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

// lockDir holds the slots' lock files when the configuration names no
// lock_dir (conf fills in its default, conf.DefaultLockDir). It is the
// user's own: created 0700, and refused when it is a symbolic link,
// belongs to another user or is writable by others (see ownDir), so that
// no other local user can put a file or a link in it.
var lockDir = conf.DefaultLockDir()

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
	lockDir := cmp.Or(cfg.LockDir, lockDir)
	if err := ownDir(lockDir); err != nil {
		return unique(agent), nil, err
	}
	for n := range maxSlots {
		path := filepath.Join(lockDir, place+"-"+strconv.Itoa(n)+".lock")
		f, err := openSlot(path)
		if err != nil {
			return unique(agent), nil, err
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

// ownDir creates dir 0700 (with its missing parents), or checks that the
// dir that exists is one only this user can write: a directory, not a
// symbolic link, owned by the effective uid, not writable by group or
// others.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s for the agent's slot: %v", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("cannot read %s for the agent's slot: %v", dir, err)
	}
	why := ""
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		why = "is a symbolic link; remove it"
	case !fi.IsDir():
		why = "is not a directory"
	case !ok:
		why = "has no owner to check"
	case int(st.Uid) != os.Geteuid():
		why = fmt.Sprintf("belongs to uid %d, not to this process's uid %d; remove it", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		why = fmt.Sprintf("is writable by other users (mode %04o); if this user made it, chmod 0700 it, else remove it", fi.Mode().Perm())
	}
	if why != "" {
		return fmt.Errorf("refusing %s for the agent's slot: it %s", dir, why)
	}
	return nil
}

// openSlot opens (creating it 0600) the lock file at path: never through
// a symbolic link, and only a regular file of this process's user.
func openSlot(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s for the agent's slot: %v", path, err)
	}
	fi, err := f.Stat()
	why := ""
	if err != nil {
		why = "cannot read it: " + err.Error()
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !fi.Mode().IsRegular() || !ok {
		why = "it is not a regular file"
	} else if int(st.Uid) != os.Geteuid() {
		why = fmt.Sprintf("it belongs to uid %d, not to this process's uid %d", st.Uid, os.Geteuid())
	} else if fi.Mode().Perm()&0o077 != 0 {
		// An older release made it 0666: nobody else may open it to hold
		// its lock.
		err = f.Chmod(0o600)
		if err != nil {
			why = "cannot make it 0600: " + err.Error()
		}
	}
	if why != "" {
		f.Close()
		return nil, fmt.Errorf("refusing %s for the agent's slot: %s", path, why)
	}
	return f, nil
}

// unique is an identity no other process has.
func unique(agent string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return agent + "/pid" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b)
}
