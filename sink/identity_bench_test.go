package sink

import (
	"os"
	"testing"
)

// ChunkID on the 5000-record fixtures, to set beside BenchmarkTranscode*
// (the whole CPU path of the same chunks): the share of a flush the
// chunk's identity takes.
func BenchmarkChunkID(b *testing.B) {
	for _, f := range []string{"chunk-app-json-5000.msgpack", "chunk-apache2-5000.msgpack", "chunk-raw-access-5000.msgpack"} {
		chunk, err := os.ReadFile("../test/testdata/" + f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f, func(b *testing.B) {
			b.SetBytes(int64(len(chunk)))
			for i := 0; i < b.N; i++ {
				ChunkID("", "tag", chunk)
			}
		})
	}
}
