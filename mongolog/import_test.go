package mongolog

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// chunks records the chunks it is given, decoded as the plugin decodes
// them; it gives the first `retry` back.
type chunks struct {
	got   [][]byte
	lines []string
	retry int
	after func(n int) // called after each chunk stored
}

func (c *chunks) Flush(tag string, data []byte) sink.Status {
	if c.retry > 0 {
		c.retry--
		return sink.Retry
	}
	d, err := parser.NewDecoder(parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"})
	if err != nil {
		panic(err)
	}
	var b parser.Batch
	d.Decode(data, nil, &b)
	if b.Corrupt != nil || len(b.Bad) > 0 {
		panic("a chunk that does not decode")
	}
	for _, r := range b.Records {
		c.lines = append(c.lines, r.Doc.Lookup("log").StringValue())
	}
	c.got = append(c.got, append([]byte(nil), data...))
	if c.after != nil {
		c.after(len(c.got))
	}
	return sink.Done
}

// Import reads plain files, gzip files and standard input, in chunks that
// are the same bytes on every run; a chunk given back is sent again; a
// cancelled import stops between chunks.
func TestImportFiles(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 25 {
		want = append(want, strings.Repeat("x", i)+" line")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte(strings.Join(want[:10], "\n")+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(want[10:20], "\r\n")))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "b.log.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin := strings.Join(want[20:], "\n")
	run := func(c *chunks, ctx context.Context) (Imported, error) {
		return Import(ctx, c, ImportOptions{Paths: []string{filepath.Join(dir, "*.log*"), "-"}, ChunkLines: 4,
			Stdin: strings.NewReader(stdin), Retry: time.Millisecond})
	}
	first := &chunks{retry: 2}
	res, err := run(first, context.Background())
	if err != nil || res.Records != 25 || res.Files != 3 || res.Retries != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if strings.Join(first.lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines:\n%q\nwant\n%q", first.lines, want)
	}
	// The same files give the same chunks (stdin's time is the time of the run).
	second := &chunks{}
	if _, err := run(second, context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // the chunks of the two files
		if !bytes.Equal(first.got[i], second.got[i]) {
			t.Errorf("chunk %d differs between two runs over the same files", i)
		}
	}
	// Cancelled after 2 chunks: it stops there.
	ctx, cancel := context.WithCancel(context.Background())
	third := &chunks{after: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	res, err = run(third, ctx)
	if err == nil || len(third.got) != 2 || res.Records != 8 {
		t.Errorf("cancelled: %d chunks, %+v, %v", len(third.got), res, err)
	}
}
