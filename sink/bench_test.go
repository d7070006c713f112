package sink

import (
	"context"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// nullStore accepts every write without I/O.
type nullStore struct{}

func (nullStore) Upserts(_ context.Context, _ string, ups []writer.Upsert) []error {
	return make([]error, len(ups))
}
func (nullStore) Find(context.Context, string, bson.Raw, writer.Query) ([]bson.Raw, error) {
	return nil, nil
}
func (nullStore) InsertMany(context.Context, string, []bson.Raw) error         { return nil }
func (nullStore) Replace(context.Context, string, []bson.Raw) error            { return nil }
func (nullStore) Ping(context.Context) error                                   { return nil }
func (nullStore) UpdateMany(context.Context, string, bson.Raw, bson.Raw) error { return nil }

type quietLog struct{}

func (quietLog) Debugf(string, ...any) {}
func (quietLog) Infof(string, ...any)  {}
func (quietLog) Warnf(string, ...any)  {}
func (quietLog) Errorf(string, ...any) {}

// benchFlush measures the whole CPU path of one chunk: decode, parse,
// group, and build every bucket update (the store does no I/O). One sink
// serves every iteration, as one plugin instance serves every flush.
func benchFlush(b *testing.B, file, line string) { benchFlushTo(b, file, line, "", "") }

// benchFlushTo is benchFlush writing to the collection template coll ("":
// the static collection logs), grouping by the field key ("": the tag).
func benchFlushTo(b *testing.B, file, line, coll, key string) {
	chunk, err := os.ReadFile("../test/testdata/" + file)
	if err != nil {
		b.Fatal(err)
	}
	lp, err := parser.NewLineParser(line, "")
	if err != nil {
		b.Fatal(err)
	}
	opt := Options{
		Mode: model.ModeBucket, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", Idempotent: true,
		MaxInflight: 4, WriteBatch: 100, FlushTimeout: time.Minute, MaxRecords: 1000, MaxBytes: 1 << 20,
		Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_", Line: lp, ParseKey: "log"},
		Grouper: bucketer.Config{TagKey: "tag", Window: time.Minute, ReplaceDot: "_", ReplaceDollar: "_"},
	}
	if coll != "" {
		opt.Targets = testRouter(b, "fluentbit", coll, 1000).t
	}
	if key != "" {
		opt.Grouper.KeyPaths = []string{key}
	}
	n, _ := parser.CountRecords(chunk)
	s, err := New(opt, nullStore{}, writer.DefaultRetry, quietLog{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res := s.Flush(context.Background(), "tag", chunk); res.Status != Done {
			b.Fatal(res.Err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkTranscodeAppJSON(b *testing.B) { benchFlush(b, "chunk-app-json-5000.msgpack", "") }
func BenchmarkTranscodeApache2(b *testing.B) {
	benchFlush(b, "chunk-apache2-5000.msgpack", "apache_combined")
}
func BenchmarkTranscodeRawAccess(b *testing.B) {
	benchFlush(b, "chunk-raw-access-5000.msgpack", "apache_combined")
}

// BenchmarkTranscodeAppJSONByModule is the same buckets as the field
// template's (one group per module and window), in one collection.
func BenchmarkTranscodeAppJSONByModule(b *testing.B) {
	benchFlushTo(b, "chunk-app-json-5000.msgpack", "", "", "module")
}
func BenchmarkTranscodeAppJSONTagTemplate(b *testing.B) {
	benchFlushTo(b, "chunk-app-json-5000.msgpack", "", "logs_$TAG[0]", "")
}
func BenchmarkTranscodeAppJSONFieldTemplate(b *testing.B) {
	benchFlushTo(b, "chunk-app-json-5000.msgpack", "", "app_$module", "")
}
