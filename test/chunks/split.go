package chunks

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// Split cuts a chunk into chunks of at most per records each, in order,
// as Fluent Bit would have flushed the same records in several chunks.
func Split(chunk []byte, per int) ([][]byte, error) {
	if per < 1 {
		return nil, fmt.Errorf("split into chunks of %d records: want at least 1", per)
	}
	dec := msgpack.NewDecoder(bytes.NewReader(chunk))
	var out [][]byte
	var cur []byte
	n := 0
	for {
		rec, err := dec.DecodeRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", len(out)*per+n, err)
		}
		cur = append(cur, rec...)
		if n++; n == per {
			out, cur, n = append(out, cur), nil, 0
		}
	}
	if n > 0 {
		out = append(out, cur)
	}
	return out, nil
}
