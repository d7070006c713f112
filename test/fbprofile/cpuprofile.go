//go:build outmongodb_cpuprofile

// A CPU profile of the plugin inside a real Fluent Bit, kept out of the
// product: this file is laid into plugin/ only for a profiling build,
// through the go command's -overlay, with its build tag:
//
//	printf '{"Replace":{"%s/plugin/cpuprofile.go":"%s/test/fbprofile/cpuprofile.go"}}' $PWD $PWD > /tmp/overlay.json
//	go build -tags outmongodb_cpuprofile -overlay /tmp/overlay.json -buildmode=c-shared -o build/out_mongodb_profile.so ./plugin
//	OUT_MONGODB_CPUPROFILE=/tmp/fb.prof OUT_MONGODB_CPUPROFILE_SECONDS=30 fluent-bit -e build/out_mongodb_profile.so -c ...
//	go tool pprof -top build/out_mongodb_profile.so /tmp/fb.prof
//
// With OUT_MONGODB_CPUPROFILE set, the profile starts when Fluent Bit loads
// the plugin and is written after OUT_MONGODB_CPUPROFILE_SECONDS (30 by
// default): Fluent Bit gives a plugin no call at its own exit to stop it in.

package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

func init() {
	path := os.Getenv("OUT_MONGODB_CPUPROFILE")
	if path == "" {
		return
	}
	secs, err := strconv.Atoi(os.Getenv("OUT_MONGODB_CPUPROFILE_SECONDS"))
	if err != nil || secs <= 0 {
		secs = 30
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "out_mongodb: CPU profile %s: %v\n", path, err)
		return
	}
	time.AfterFunc(time.Duration(secs)*time.Second, func() {
		pprof.StopCPUProfile()
		f.Close()
		fmt.Fprintf(os.Stderr, "out_mongodb: CPU profile of %d s written to %s\n", secs, path)
	})
}
