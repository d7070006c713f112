package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/chunks"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// keyCounts are the distinct bucket keys per chunk the keys table measures.
var keyCounts = []int{1000, 10000, 100000, 1000000}

// firstFlush measures the CPU path of chunk flushed to a new sink each
// time: every group is new to it, as every trace id is to a plugin.
func firstFlush(b *testing.B, opt sink.Options, tag string, chunk []byte) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := sink.New(opt, nullStore{}, writer.DefaultRetry, quiet{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if res := s.Flush(context.Background(), tag, chunk); res.Status != sink.Done {
			b.Fatal(res.Err)
		}
	}
}

// keyRows measures the CPU path of chunks whose every record has a trace
// id of its own, grouped by trace id without a window: as many groups as
// records, from 1,000 to upTo. The cost per record must not grow with the
// keys.
func keyRows(upTo int) error {
	fmt.Println("\nCPU per record by distinct bucket keys per chunk (a key per record; bucket_key traceId, bucket_window 0):")
	fmt.Printf("%-10s %14s %12s %12s %10s\n", "keys", "records/s", "ns/record", "allocs/rec", "B/rec")
	opt, err := sinkOptions(workload{traces: 1}, model.ModeBucket)
	if err != nil {
		return err
	}
	opt.FlushTimeout = 10 * time.Minute // a chunk of a million records
	for _, n := range keyCounts {
		if n > upTo {
			break
		}
		chunk := chunks.Keys(n)
		r := testing.Benchmark(func(b *testing.B) { firstFlush(b, opt, "app.log", chunk) })
		if r.N == 0 {
			return fmt.Errorf("%d keys: the flush did not end Done", n)
		}
		perRec := float64(r.T.Nanoseconds()) / float64(r.N) / float64(n)
		fmt.Printf("%-10d %14.0f %12.0f %12.2f %10.0f\n", n, rate(r, n), perRec,
			float64(r.AllocsPerOp())/float64(n), float64(r.AllocedBytesPerOp())/float64(n))
	}
	return nil
}
