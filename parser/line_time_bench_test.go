package parser

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// lineChunk is a chunk of the records of app-5000.log as raw lines under
// "log", each with its time under "time": as JSON, or written as logfmt.
func lineChunk(b *testing.B, logfmt bool) []byte {
	var chunk []byte
	for i, line := range fixtureLines(b, "app-5000.log") {
		line = strings.Replace(line, `{"ts":`, `{"time":`, 1)
		if logfmt {
			var r struct {
				Time, Level, Module, TraceID, Msg string
				Cost, Seq                         int
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				b.Fatal(err)
			}
			line = fmt.Sprintf("time=%s level=%s module=%s traceId=%s msg=%q cost=%d seq=%d",
				r.Time, r.Level, r.Module, r.TraceID, r.Msg, r.Cost, r.Seq)
		}
		chunk = append(chunk, rec(b, evt(uint32(1717236000+i), 0), kv{}, kv{"log", line})...)
	}
	return chunk
}

// benchLineChunk decodes chunk with the line parser name and time_from_log
// on, and reports records/s and allocations per record.
func benchLineChunk(b *testing.B, chunk []byte, name string) {
	d := mustDecoder(b, Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_",
		Line: mustLineParser(b, name, ""), ParseKey: "log", TimeFromLog: true})
	var batch Batch
	d.Decode(chunk, nil, &batch)
	if len(batch.Records) != 5000 || len(batch.Bad) != 0 || batch.Corrupt != nil {
		b.Fatalf("%d records, %d bad, %v", len(batch.Records), len(batch.Bad), batch.Corrupt)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		d.Decode(chunk, nil, &batch)
	}
	b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDecodeJSONLinesTime(b *testing.B)   { benchLineChunk(b, lineChunk(b, false), "json") }
func BenchmarkDecodeLogfmtLinesTime(b *testing.B) { benchLineChunk(b, lineChunk(b, true), "logfmt") }
