// Command out_mongodb is the Fluent Bit output plugin, built with
// -buildmode=c-shared. This package is the only one that uses cgo: each
// export is a few lines that call the instance package.
package main

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

typedef void (*flb_log_print_fn)(int type, const char *file, int line, const char *fmt, ...);

// flb_log_print is Fluent Bit's own log function, when the host exports it
// (fluent-bit does; other hosts may not).
static void *find_flb_log(void) { return dlsym(RTLD_DEFAULT, "flb_log_print"); }

static void flb_log(void *fn, int type, const char *msg) {
	((flb_log_print_fn)fn)(type, NULL, 0, "%s", msg);
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"

	"github.com/fluent/fluent-bit-go/output"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// live holds the instances between Init and Exit. fluent-bit-go keeps every
// context it is given for the life of the process, so it only gets a handle
// (an int): an exited instance, with its client and buffers, is released
// here, which matters when a hot reload creates new instances.
var live struct {
	sync.Mutex
	next      int                        // handle of the next instance
	named     int                        // N of the next default name mongodb.N
	instances map[int]*instance.Instance // by handle
}

func lookup(ctx unsafe.Pointer) *instance.Instance {
	h, ok := output.FLBPluginGetContext(ctx).(int)
	if !ok {
		return nil
	}
	live.Lock()
	defer live.Unlock()
	return live.instances[h]
}

// config reads the properties of the instance being initialised. It is only
// valid inside FLBPluginInit: Fluent Bit shares the plugin pointer between
// instances.
type config struct{ plugin unsafe.Pointer }

func (c config) Get(key string) string { return output.FLBPluginConfigKey(c.plugin, key) }

//export FLBPluginRegister
func FLBPluginRegister(def unsafe.Pointer) int {
	// Fluent Bit registers the plugin again on a hot reload and numbers the
	// new outputs from 0 again.
	live.Lock()
	live.named = 0
	live.Unlock()
	return output.FLBPluginRegister(def, "mongodb", "MongoDB output: buckets of records, written exactly once")
}

//export FLBPluginInit
func FLBPluginInit(plugin unsafe.Pointer) (rc int) {
	defer func() {
		if r := recover(); r != nil {
			instance.NewLogger(os.Stderr, "init", conf.LogError).Errorf("init failed: panic: %v\n%s", r, debug.Stack())
			rc = output.FLB_ERROR
		}
	}()
	live.Lock()
	name := fmt.Sprintf("mongodb.%d", live.named)
	live.named++
	live.Unlock()
	in, err := instance.New(config{plugin}, name, os.Stderr)
	if err != nil {
		startupError(name, "invalid configuration, the output is not started:", strings.Split(err.Error(), "\n"))
		return output.FLB_ERROR
	}
	live.Lock()
	if live.instances == nil {
		live.instances = map[int]*instance.Instance{}
	}
	h := live.next
	live.next++
	live.instances[h] = in
	live.Unlock()
	output.FLBPluginSetContext(plugin, h)
	return output.FLB_OK
}

// flbError is Fluent Bit's FLB_LOG_ERROR.
const flbError = 1

// startupError logs why an instance did not start. Fluent Bit writes its
// own lines through a log thread, so a line written straight to stderr
// lands above the start-up lines that precede it; through Fluent Bit's log
// function (when the host exports it) the lines read in order, next to
// Fluent Bit's own "failed to initialize". Each line is one log line.
func startupError(name, head string, lines []string) {
	fn := C.find_flb_log()
	if fn == nil {
		instance.NewLogger(os.Stderr, name, conf.LogError).Errorf("%s\n%s", head, strings.Join(lines, "\n"))
		return
	}
	for _, l := range append([]string{head}, lines...) {
		msg := C.CString("[out_mongodb:" + name + "] " + strings.TrimSpace(l))
		C.flb_log(fn, flbError, msg)
		C.free(unsafe.Pointer(msg))
	}
}

//export FLBPluginFlushCtx
func FLBPluginFlushCtx(ctx, data unsafe.Pointer, length C.int, tag *C.char) int {
	in := lookup(ctx)
	if in == nil {
		fmt.Fprintf(os.Stderr, "[error] [out_mongodb] flush without a live instance; chunk retried\n")
		return output.FLB_RETRY
	}
	// Fluent Bit frees data and tag when this call returns: copy both.
	switch in.Flush(C.GoString(tag), C.GoBytes(data, length)) {
	case sink.Done:
		return output.FLB_OK
	default:
		return output.FLB_RETRY
	}
}

//export FLBPluginExitCtx
func FLBPluginExitCtx(ctx unsafe.Pointer) int {
	h, ok := output.FLBPluginGetContext(ctx).(int)
	if !ok {
		return output.FLB_OK
	}
	live.Lock()
	in := live.instances[h]
	delete(live.instances, h)
	live.Unlock()
	if in != nil {
		in.Exit()
	}
	return output.FLB_OK
}

// FLBPluginExit is never called by Fluent Bit while FLBPluginExitCtx is
// exported (the proxy calls one or the other, per instance). Should an agent
// call it anyway, it can only mean shutdown: it exits whatever instance is
// still live, and later calls find none.
//
//export FLBPluginExit
func FLBPluginExit() int {
	live.Lock()
	ins := live.instances
	live.instances = nil
	live.Unlock()
	for _, in := range ins {
		in.Exit()
	}
	return output.FLB_OK
}

//export FLBPluginUnregister
func FLBPluginUnregister(def unsafe.Pointer) {
	output.FLBPluginUnregister(def)
}

func main() {}
