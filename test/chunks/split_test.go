package chunks

import (
	"bytes"
	"os"
	"testing"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// The parts hold the records in order, per to a part but the last, and
// put together they are the chunk.
func TestSplit(t *testing.T) {
	chunk, err := os.ReadFile("../testdata/chunk-app-json-5000.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := Split(chunk, 2000)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{2000, 2000, 1000}
	if len(parts) != len(want) {
		t.Fatalf("%d parts, want %d", len(parts), len(want))
	}
	for i, p := range parts {
		if n, err := parser.CountRecords(p); err != nil || n != want[i] {
			t.Errorf("part %d: %d records (%v), want %d", i, n, err, want[i])
		}
	}
	if !bytes.Equal(bytes.Join(parts, nil), chunk) {
		t.Error("the parts put together are not the chunk")
	}
}
