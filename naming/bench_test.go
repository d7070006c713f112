package naming

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// appRecord is the first record of the app-json fixture chunk, decoded by
// the plugin's own decoder into the entry document the writer stores:
// ts, level, module, traceId, msg, cost, seq.
func appRecord(b testing.TB) bson.Raw {
	b.Helper()
	chunk, err := os.ReadFile(filepath.Join("..", "test", "testdata", "chunk-app-json-5000.msgpack"))
	if err != nil {
		b.Fatal(err)
	}
	d, err := parser.NewDecoder(parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"})
	if err != nil {
		b.Fatal(err)
	}
	var batch parser.Batch
	d.Decode(chunk, nil, &batch)
	if len(batch.Records) != 5000 {
		b.Fatalf("%d records", len(batch.Records))
	}
	return bson.Raw(batch.Records[0].Doc)
}

func benchResolve(b *testing.B, src, tag string, rec bson.Raw, want string) {
	tpl := mustParse(b, src, Collection)
	if got, _ := tpl.Resolve(tag, rec); got != want {
		b.Fatalf("Resolve(%q) = %q, want %q", src, got, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		tpl.Resolve(tag, rec)
	}
}

func BenchmarkResolveTagOnly(b *testing.B) {
	benchResolve(b, "logs_$TAG[1]", "app.payments.prod", appRecord(b), "logs_payments")
}

func BenchmarkResolveField(b *testing.B) {
	benchResolve(b, "$['module']_logs", "app.x", appRecord(b), "user_logs")
}

// BenchmarkResolveFields reads two fields, one of them the record's last.
func BenchmarkResolveFields(b *testing.B) {
	benchResolve(b, "$module.$level.$seq", "app.x", appRecord(b), "user.error.0")
}

// BenchmarkResolveBigValue resolves a 10 KB value: the whole value is made
// safe and hashed, the name cut.
func BenchmarkResolveBigValue(b *testing.B) {
	rec := doc(b, bson.D{{Key: "v", Value: strings.Repeat("v.", 5<<10)}})
	tpl := mustParse(b, "$v", Collection)
	b.ReportAllocs()
	b.SetBytes(10 << 10)
	for b.Loop() {
		tpl.Resolve("t", rec)
	}
}

func BenchmarkSetAdmit(b *testing.B) {
	s := NewSet(100)
	s.Admit("fluentbit", "user_logs")
	b.ReportAllocs()
	for b.Loop() {
		s.Admit("fluentbit", "user_logs")
	}
}
