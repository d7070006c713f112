package parser

import (
	"runtime"
	"testing"
)

// benchDecode decodes the n-record fixture chunk name once per iteration
// into a reused Batch, as the plugin does, and reports records/s and
// allocations per record.
func benchDecode(b *testing.B, name string, n int, opt Options) {
	chunk := fixture(b, name)
	d := mustDecoder(b, opt)
	var batch Batch
	d.Decode(chunk, nil, &batch)
	if len(batch.Records) != n || batch.Corrupt != nil || len(batch.Bad) != 0 {
		b.Fatalf("%s: %d records, %d bad, %v", name, len(batch.Records), len(batch.Bad), batch.Corrupt)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		d.Decode(chunk, nil, &batch)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n*b.N), "allocs/record")
}

func BenchmarkDecodeAppJSON(b *testing.B) {
	benchDecode(b, "chunk-app-json-5000.msgpack", 5000, Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"})
}

func BenchmarkDecodeApache2(b *testing.B) {
	benchDecode(b, "chunk-apache2-5000.msgpack", 5000, Options{
		TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_",
		Types: map[string]Kind{"code": KindInt, "size": KindInt},
	})
}

func BenchmarkDecodeRawAccessWithParser(b *testing.B) {
	benchDecode(b, "chunk-raw-access-5000.msgpack", 5000, Options{
		TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_",
		Line: mustLineParser(b, "apache_combined", ""), ParseKey: "log", TimeFromLog: true,
	})
}

// BenchmarkFloorSkip is the floor: reader.skip over every record of the app
// chunk, reading each value without writing anything.
func BenchmarkFloorSkip(b *testing.B) {
	chunk := fixture(b, "chunk-app-json-5000.msgpack")
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	n := 0
	b.ResetTimer()
	for range b.N {
		r := reader{buf: chunk}
		for n = 0; r.pos < len(chunk); n++ {
			if err := r.skip(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
