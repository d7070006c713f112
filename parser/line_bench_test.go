package parser

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// discardSink is a FieldSink that drops everything, so benchmarks measure
// the parsers alone.
type discardSink struct{}

func (discardSink) String(string, string)  {}
func (discardSink) Int(string, int64)      {}
func (discardSink) Float(string, float64)  {}
func (discardSink) Bool(string, bool)      {}
func (discardSink) Null(string)            {}
func (discardSink) Time(string, time.Time) {}
func (discardSink) BeginMap(string)        {}
func (discardSink) BeginArray(string)      {}
func (discardSink) End()                   {}

// benchLines parses lines with p in turn, one line per op.
func benchLines(b *testing.B, p LineParser, lines []string) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.Parse(lines[i%len(lines)], discardSink{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkLineApacheCombined(b *testing.B) {
	benchLines(b, mustLineParser(b, "apache_combined", ""), fixtureLines(b, "access-5000.log"))
}

func BenchmarkLineNginxAccess(b *testing.B) {
	benchLines(b, mustLineParser(b, "nginx_access", ""), fixtureLines(b, "access-5000.log"))
}

// BenchmarkLineApacheCommon uses the lines of access-5000.log without their
// referer and agent.
func BenchmarkLineApacheCommon(b *testing.B) {
	common := regexp.MustCompile(`^(.*?" \d+ \S+)`)
	lines := fixtureLines(b, "access-5000.log")
	for i, line := range lines {
		lines[i] = common.FindString(line)
	}
	benchLines(b, mustLineParser(b, "apache_common", ""), lines)
}

func BenchmarkLineRegex(b *testing.B) {
	const combined = `^(?<host>\S+) \S+ (?<user>\S+) \[(?<time>[^\]]+)\] "(?<method>\S+) (?<path>\S+) (?<protocol>\S+)" (?<code>\S+) (?<size>\S+) "(?<referer>[^"]*)" "(?<agent>[^"]*)"$`
	benchLines(b, mustLineParser(b, "regex", combined), fixtureLines(b, "access-5000.log"))
}

// BenchmarkLineApacheError uses Apache 2.4 error lines made from the lines of
// access-5000.log: same times, clients and paths.
func BenchmarkLineApacheError(b *testing.B) {
	clf := mustLineParser(b, "apache_combined", "")
	var lines []string
	for _, line := range fixtureLines(b, "access-5000.log") {
		var rec lineRecorder
		if err := clf.Parse(line, &rec); err != nil {
			b.Fatal(err)
		}
		fields := map[string]string{}
		for _, f := range rec.got {
			key, val, _ := strings.Cut(f, "=")
			fields[strings.TrimSuffix(key, ":time")] = val
		}
		at, _ := time.Parse(time.RFC3339Nano, fields["time"])
		lines = append(lines, fmt.Sprintf("[%s] [core:error] [pid 1234:tid 140245] [client %s:51234] AH00128: File does not exist: /var/www/html%s",
			at.Format("Mon Jan 02 15:04:05.000000 2006"), fields["host"], fields["path"]))
	}
	benchLines(b, mustLineParser(b, "apache_error", ""), lines)
}

func BenchmarkLineJSON(b *testing.B) {
	benchLines(b, mustLineParser(b, "json", ""), fixtureLines(b, "app-5000.log"))
}

// BenchmarkLineLogfmt uses the records of app-5000.log written as logfmt.
func BenchmarkLineLogfmt(b *testing.B) {
	var lines []string
	for _, line := range fixtureLines(b, "app-5000.log") {
		var r struct {
			TS, Level, Module, TraceID, Msg string
			Cost, Seq                       int
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			b.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("ts=%s level=%s module=%s traceId=%s msg=%q cost=%d seq=%d",
			r.TS, r.Level, r.Module, r.TraceID, r.Msg, r.Cost, r.Seq))
	}
	benchLines(b, mustLineParser(b, "logfmt", ""), lines)
}
