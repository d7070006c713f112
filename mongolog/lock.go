package mongolog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockFile is the file in an export directory that a run of export holds
// (flock) while it writes there, and in which it writes who it is.
const LockFile = ".mongolog-export.lock"

// lockDir takes dir for one export: an exclusive flock on its LockFile,
// which then names this run (pid, host, start time). A run that holds it
// already is named in the error. The kernel drops the lock when the
// process ends, however it ends, so a run that died leaves the file but
// not the lock. unlock gives it back.
func lockDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "a run that has not yet written its name"
			}
			return nil, fmt.Errorf("--dir %s is in use by another mongolog export (%s; %s): wait for it to end, or export into another --dir",
				dir, who, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	host, _ := os.Hostname()
	me := fmt.Sprintf("pid %d on host %s, started %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(me), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
