package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// profileTranscode writes a CPU profile of the transcode path, every
// fixture in turn, to file (read it with go tool pprof).
func profileTranscode(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	for _, w := range workloads {
		chunk, err := w.chunk()
		if err != nil {
			return err
		}
		opt, err := sinkOptions(w, model.ModeBucket)
		if err != nil {
			return err
		}
		testing.Benchmark(func(b *testing.B) { transcode(b, opt, w.tag, chunk) })
	}
	fmt.Fprintf(os.Stderr, "bench: CPU profile of the transcode path in %s\n", file)
	return nil
}
