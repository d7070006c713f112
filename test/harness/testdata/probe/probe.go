// Command probe is a minimal Fluent Bit Go output plugin used to check the
// fbhost harness. It records what the host passes it as files in the
// directory named by the "dir" property:
//
//	<tag>-<sha256(data)[:8]>.bin   the exact flushed bytes
//	<tag>-<sha256(data)[:8]>.json  a flushRecord
//	exit-<id>                      written by FLBPluginExitCtx
//	unregister                     written by FLBPluginUnregister
//
// Properties: dir, id, label (echoed back), rc (flush return code, default
// FLB_OK), sleep_ms (delay inside each flush), host (must stay invisible).
// Init prints "probe: init <id>" on stdout; a flush with tag "panic" panics.
package main

import (
	"C"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fluent/fluent-bit-go/output"
)

// instance is the per-instance state read in Init.
type instance struct {
	dir, id, label, host string
	rc                   int
	sleep                time.Duration
	plugin               unsafe.Pointer // as passed to this instance's Init
}

// flushRecord is what a flush writes next to the data; the harness test
// decodes the same JSON field names.
type flushRecord struct {
	Tag    string `json:"tag"`
	ID     string `json:"id"`     // from the instance context
	Label  string `json:"label"`  // from the instance context
	Host   string `json:"host"`   // reserved key: must be empty
	Shared string `json:"shared"` // "id" read at flush time via the plugin pointer
	Same   bool   `json:"same"`   // Init got the same plugin pointer as the last Init
	Peak   int32  `json:"peak"`   // most flushes seen in flight at once so far
}

var (
	lastPlugin unsafe.Pointer // plugin pointer of the latest Init
	lastDir    string         // for FLBPluginUnregister, which gets no context
	inFlight   atomic.Int32
	peak       atomic.Int32
)

//export FLBPluginRegister
func FLBPluginRegister(def unsafe.Pointer) int {
	return output.FLBPluginRegister(def, "probe", "fbhost harness probe")
}

//export FLBPluginInit
func FLBPluginInit(plugin unsafe.Pointer) int {
	rc, err := strconv.Atoi(output.FLBPluginConfigKey(plugin, "rc"))
	if err != nil {
		rc = output.FLB_OK
	}
	ms, _ := strconv.Atoi(output.FLBPluginConfigKey(plugin, "sleep_ms"))
	ins := &instance{
		dir:    output.FLBPluginConfigKey(plugin, "dir"),
		id:     output.FLBPluginConfigKey(plugin, "id"),
		label:  output.FLBPluginConfigKey(plugin, "label"),
		host:   output.FLBPluginConfigKey(plugin, "host"),
		rc:     rc,
		sleep:  time.Duration(ms) * time.Millisecond,
		plugin: plugin,
	}
	lastPlugin, lastDir = plugin, ins.dir
	fmt.Println("probe: init", ins.id)
	output.FLBPluginSetContext(plugin, ins)
	return output.FLB_OK
}

//export FLBPluginFlushCtx
func FLBPluginFlushCtx(ctx, data unsafe.Pointer, length C.int, tag *C.char) int {
	ins := output.FLBPluginGetContext(ctx).(*instance)
	if C.GoString(tag) == "panic" {
		panic("probe: asked to panic")
	}
	n := inFlight.Add(1)
	defer inFlight.Add(-1)
	for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
	}
	time.Sleep(ins.sleep)

	body := C.GoBytes(data, length)
	rec := flushRecord{
		Tag:    C.GoString(tag),
		ID:     ins.id,
		Label:  ins.label,
		Host:   ins.host,
		Shared: output.FLBPluginConfigKey(ins.plugin, "id"),
		Same:   ins.plugin == lastPlugin,
		Peak:   peak.Load(),
	}
	sum := sha256.Sum256(body)
	base := filepath.Join(ins.dir, rec.Tag+"-"+hex.EncodeToString(sum[:8]))
	meta, _ := json.Marshal(rec)
	if os.WriteFile(base+".bin", body, 0o644) != nil || os.WriteFile(base+".json", meta, 0o644) != nil {
		return output.FLB_ERROR
	}
	return ins.rc
}

//export FLBPluginExitCtx
func FLBPluginExitCtx(ctx unsafe.Pointer) int {
	ins := output.FLBPluginGetContext(ctx).(*instance)
	if os.WriteFile(filepath.Join(ins.dir, "exit-"+ins.id), nil, 0o644) != nil {
		return output.FLB_ERROR
	}
	return output.FLB_OK
}

//export FLBPluginUnregister
func FLBPluginUnregister(def unsafe.Pointer) {
	output.FLBPluginUnregister(def)
	os.WriteFile(filepath.Join(lastDir, "unregister"), nil, 0o644)
}

func main() {}
