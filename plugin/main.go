// Command out_mongodb is the Fluent Bit output plugin, built with
// -buildmode=c-shared. This package is the only one that uses cgo: each
// export is a few lines that call the instance package.
package main

import (
	"C"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/fluent/fluent-bit-go/output"

	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// instances numbers the outputs for their default names.
var instances atomic.Int64

// config reads the properties of the instance being initialised. It is only
// valid inside FLBPluginInit: Fluent Bit shares the plugin pointer between
// instances.
type config struct{ plugin unsafe.Pointer }

func (c config) Get(key string) string { return output.FLBPluginConfigKey(c.plugin, key) }

//export FLBPluginRegister
func FLBPluginRegister(def unsafe.Pointer) int {
	return output.FLBPluginRegister(def, "mongodb", "MongoDB output: buckets of records, written exactly once")
}

//export FLBPluginInit
func FLBPluginInit(plugin unsafe.Pointer) (rc int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "[error] [out_mongodb] init failed: panic: %v\n", r)
			rc = output.FLB_ERROR
		}
	}()
	in, err := instance.New(config{plugin}, fmt.Sprintf("mongodb.%d", instances.Add(1)-1), os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "[error] [out_mongodb] invalid configuration:\n%v\n", err)
		return output.FLB_ERROR
	}
	output.FLBPluginSetContext(plugin, in)
	return output.FLB_OK
}

//export FLBPluginFlushCtx
func FLBPluginFlushCtx(ctx, data unsafe.Pointer, length C.int, tag *C.char) int {
	in, ok := output.FLBPluginGetContext(ctx).(*instance.Instance)
	if !ok {
		fmt.Fprintf(os.Stderr, "[error] [out_mongodb] flush without an initialised instance; chunk retried\n")
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
	if in, ok := output.FLBPluginGetContext(ctx).(*instance.Instance); ok {
		in.Exit()
	}
	return output.FLB_OK
}

//export FLBPluginExit
func FLBPluginExit() int {
	// Only called by agents that do not know FLBPluginExitCtx; those agents
	// have one context per plugin, which ExitCtx handles above.
	return output.FLB_OK
}

//export FLBPluginUnregister
func FLBPluginUnregister(def unsafe.Pointer) {
	output.FLBPluginUnregister(def)
}

func main() {}
