package writer

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The look-up of stored documents is taken in parts of at most lookupIDs
// ids and lookupBytes of them, one id at least however large.
func TestLookupPart(t *testing.T) {
	docsOf := func(sizes ...int) []Doc {
		var docs []Doc
		for _, n := range sizes {
			docs = append(docs, Doc{ID: bsoncore.Value{Type: bsoncore.TypeString, Data: make([]byte, n)}})
		}
		return docs
	}
	repeat := func(n, size int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = size
		}
		return out
	}
	for _, c := range []struct {
		name  string
		sizes []int
		want  []int
	}{
		{"small ids, by count", repeat(2500, 16), []int{lookupIDs, lookupIDs, 500}},
		{"large ids, by bytes", repeat(5, 600<<10), []int{1, 1, 1, 1, 1}},
		{"an id over the bytes alone", []int{2 << 20, 16, 16}, []int{1, 2}},
		{"up to the bytes exactly", []int{lookupBytes / 2, lookupBytes / 2, 1}, []int{2, 1}},
	} {
		docs := docsOf(c.sizes...)
		pending := make([]int, len(docs))
		for i := range pending {
			pending[i] = i
		}
		var got []int
		for len(pending) > 0 {
			n := lookupPart(docs, pending)
			got = append(got, n)
			pending = pending[n:]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: parts %v, want %v", c.name, got, c.want)
		}
	}
}
