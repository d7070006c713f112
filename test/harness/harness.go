// Package harness drives a Fluent Bit Go output plugin (.so) the way Fluent
// Bit v4.2.8 does, through the fbhost C program (fbhost.c, see its header for
// the line protocol and the proxy behaviour it reproduces).
//
// The real call order is Register, Init for every instance (all before the
// first flush), Flush any number of times, Exit for every instance, then
// Unregister; fbhost refuses orders Fluent Bit never produces.
package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Return codes shared by Fluent Bit and fluent-bit-go. A flush returning
// anything else is treated as FLBError by Fluent Bit; Init fails on <= 0.
const (
	FLBError = 0
	FLBOK    = 1
	FLBRetry = 2
)

// DefaultTimeout bounds every command, so a hung plugin fails the test.
const DefaultTimeout = 2 * time.Minute

// Build compiles srcDir/fbhost.c to outDir/fbhost unless that binary is
// newer than the source, and returns the binary's path.
func Build(srcDir, outDir string) (string, error) {
	return BuildWith("gcc", srcDir, outDir, "fbhost")
}

// BuildWith is Build with the C compiler cc (a cross compiler such as
// aarch64-linux-gnu-gcc builds fbhost for another architecture) and the
// binary named name.
func BuildWith(cc, srcDir, outDir, name string) (string, error) {
	src := filepath.Join(srcDir, "fbhost.c")
	bin := filepath.Join(outDir, name)
	si, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	if bi, err := os.Stat(bin); err == nil && !bi.ModTime().Before(si.ModTime()) {
		return bin, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	// Build under a temporary name and rename, so concurrent builders
	// never run a half-written binary.
	tmp, err := os.CreateTemp(outDir, name+"-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	out, err := exec.Command(cc, "-O2", "-g", "-Wall", "-Wextra", "-o", tmp.Name(),
		src, "-ldl", "-lpthread").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", cc, src, err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// Host is a running fbhost process with one plugin loaded. Its methods may
// be called from several goroutines; commands run one at a time.
type Host struct {
	// Timeout bounds each command; on expiry the process is killed.
	Timeout time.Duration

	mu      sync.Mutex // serializes commands
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string   // result lines from fbhost's stdout
	done    chan struct{} // closed once the process has exited
	waitErr error         // valid after done is closed
	closed  bool
	log     Buffer
}

// Buffer is a log writer safe for concurrent use. A Host collects the
// plugin's stderr (which also receives its stdout) in one.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lineWriter turns fbhost's stdout into result lines.
type lineWriter struct {
	partial []byte
	lines   chan<- string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
}

// Start runs the fbhost binary bin with the plugin so, in this process's
// environment plus env ("KEY=value"). Nothing is loaded until Register.
func Start(bin, so string, env ...string) (*Host, error) {
	return StartCommand([]string{bin, so}, env...)
}

// StartCommand is Start with the whole command line: fbhost and the plugin
// as its last two words, after what runs them (an emulator such as
// `qemu-aarch64 -L /usr/aarch64-linux-gnu` for an fbhost of another
// architecture).
func StartCommand(argv []string, env ...string) (*Host, error) {
	if len(argv) < 2 {
		return nil, errors.New("harness: the command needs fbhost and the plugin")
	}
	h := &Host{
		Timeout: DefaultTimeout,
		cmd:     exec.Command(argv[0], argv[1:]...),
		lines:   make(chan string, 16),
		done:    make(chan struct{}),
	}
	if len(env) > 0 {
		h.cmd.Env = append(os.Environ(), env...)
	}
	h.cmd.Stdout = &lineWriter{lines: h.lines}
	h.cmd.Stderr = &h.log
	// A plugin that leaves a child holding the pipes must not hang Wait.
	h.cmd.WaitDelay = 5 * time.Second
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		h.waitErr = h.cmd.Wait()
		close(h.done)
	}()
	return h, nil
}

// Pid is the host process's id.
func (h *Host) Pid() int { return h.cmd.Process.Pid }

// Stderr returns everything fbhost and the plugin have logged so far.
func (h *Host) Stderr() string { return h.log.String() }

// Register calls FLBPluginRegister and returns the plugin name and rc. After
// Unregister it starts a hot reload, as Fluent Bit's reload does.
func (h *Host) Register() (string, int, error) {
	line, err := h.do("register")
	if err != nil {
		return "", 0, err
	}
	rc, err := parseRC(line)
	if err != nil {
		return "", 0, err
	}
	_, name, _ := strings.Cut(line, " name=")
	return name, rc, nil
}

// Init creates instance id with the given properties and calls FLBPluginInit.
// Keys Fluent Bit keeps for itself (match, host, port, workers, tls.*, net.*,
// ...) and empty values are not visible to the plugin, as in Fluent Bit.
func (h *Host) Init(id string, props map[string]string) (int, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"init", escape(id)}
	for _, k := range keys {
		args = append(args, escape(k)+"="+escape(props[k]))
	}
	return h.rcCommand(args...)
}

// Flush passes the bytes of file with tag to instance id (FLBPluginFlushCtx,
// or FLBPluginFlush if FlushCtx is not exported) and returns the raw rc.
func (h *Host) Flush(id, tag, file string) (int, error) {
	return h.rcCommand("flush", escape(id), escape(tag), escape(file))
}

// FlushConcurrent flushes every file to instance id at once, one thread per
// file (Fluent Bit with Workers N), and returns the rcs in file order.
func (h *Host) FlushConcurrent(id, tag string, files []string) ([]int, error) {
	args := []string{"flushconc", escape(id), escape(tag)}
	for _, f := range files {
		args = append(args, escape(f))
	}
	line, err := h.do(args...)
	if err != nil {
		return nil, err
	}
	i := strings.LastIndex(line, " rc=")
	if i < 0 {
		return nil, fmt.Errorf("fbhost: malformed result %q", line)
	}
	var rcs []int
	for _, s := range strings.Split(line[i+len(" rc="):], ",") {
		rc, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("fbhost: malformed result %q", line)
		}
		rcs = append(rcs, rc)
	}
	return rcs, nil
}

// Exit calls FLBPluginExitCtx for instance id (FLBPluginExit if ExitCtx is
// not exported). Fluent Bit ignores the rc.
func (h *Host) Exit(id string) (int, error) {
	return h.rcCommand("exit", escape(id))
}

// Unregister calls FLBPluginUnregister, which returns void: rc is always 0.
// A Register after it is a hot reload: the plugin is registered again and
// new instances (with new ids) can be initialised.
func (h *Host) Unregister() (int, error) {
	return h.rcCommand("unregister")
}

// Close ends fbhost (stdin EOF) and reports a crash or non-zero exit, with
// the log. Instances still alive are not exited. Calling Close again
// returns the same result.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.stdin.Close()
		select {
		case <-h.done:
		case <-time.After(h.Timeout):
			h.cmd.Process.Kill()
			<-h.done
			return fmt.Errorf("fbhost did not exit within %v after stdin closed\n%s", h.Timeout, h.Stderr())
		}
	}
	<-h.done
	if h.waitErr != nil {
		return fmt.Errorf("fbhost: %v\n%s", h.waitErr, h.Stderr())
	}
	return nil
}

// rcCommand runs a command whose result carries a single rc=<n>.
func (h *Host) rcCommand(args ...string) (int, error) {
	line, err := h.do(args...)
	if err != nil {
		return 0, err
	}
	return parseRC(line)
}

// do sends one command line and waits for its result line.
func (h *Host) do(args ...string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", errors.New("fbhost: host is closed")
	}
	for _, a := range args {
		if a == "" { // an empty token would vanish from the command line
			return "", fmt.Errorf("fbhost %s: empty argument", args[0])
		}
	}
	if _, err := io.WriteString(h.stdin, strings.Join(args, " ")+"\n"); err != nil {
		return "", h.died(args[0], err)
	}
	timer := time.NewTimer(h.Timeout)
	defer timer.Stop()
	select {
	case line := <-h.lines:
		return checkResult(args[0], line)
	case <-h.done:
		// The process exited; its last line may still be queued.
		select {
		case line := <-h.lines:
			return checkResult(args[0], line)
		default:
			return "", h.died(args[0], nil)
		}
	case <-timer.C:
		h.cmd.Process.Kill()
		<-h.done
		return "", fmt.Errorf("fbhost %s: no result within %v (plugin hung?), killed\n%s", args[0], h.Timeout, h.Stderr())
	}
}

// died ends the process (if it is not already gone) and describes its end.
func (h *Host) died(cmd string, err error) error {
	h.cmd.Process.Kill()
	<-h.done
	if err != nil {
		return fmt.Errorf("fbhost %s: process ended (%v; sending the command: %v)\n%s", cmd, h.waitErr, err, h.Stderr())
	}
	return fmt.Errorf("fbhost %s: process ended (%v)\n%s", cmd, h.waitErr, h.Stderr())
}

// checkResult turns "error ..." lines and unexpected answers into errors.
func checkResult(cmd, line string) (string, error) {
	if strings.HasPrefix(line, "error ") {
		return "", errors.New("fbhost: " + strings.TrimPrefix(line, "error "))
	}
	if !strings.HasPrefix(line, cmd+" ") {
		return "", fmt.Errorf("fbhost %s: unexpected result %q", cmd, line)
	}
	return line, nil
}

// parseRC extracts the rc=<n> field of a result line.
func parseRC(line string) (int, error) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "rc="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("fbhost: no rc in result %q", line)
}

// escape %-encodes what would break fbhost's tokenizer: whitespace and
// control bytes, '%', '=' and DEL.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '%' || c == '=' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
