// Package chunks derives test chunks from the recorded ones in testdata.
package chunks

import (
	"bytes"
	"fmt"
)

// traceKey is the msgpack of the app fixture's "traceId" key followed by the
// header of its 8-character string value.
var traceKey = append([]byte{0xa7}, "traceId\xa8"...)

// Traces rewrites the trace ids of an app chunk (chunk-app-json-5000) in
// place of the recorded ones, which are all distinct: record i gets trace
// "tr" + i/perTrace in six digits, so consecutive records share a trace as
// the records of one request do. The chunk keeps its size and layout.
func Traces(app []byte, perTrace int) ([]byte, error) {
	out := bytes.Clone(app)
	at, i := 0, 0
	for {
		j := bytes.Index(out[at:], traceKey)
		if j < 0 {
			break
		}
		at += j + len(traceKey)
		if at+8 > len(out) {
			return nil, fmt.Errorf("trace id %d cut short", i)
		}
		copy(out[at:at+8], fmt.Sprintf("tr%06d", i/perTrace))
		at += 8
		i++
	}
	if i == 0 {
		return nil, fmt.Errorf("no traceId fields of 8 characters in the chunk")
	}
	return out, nil
}
