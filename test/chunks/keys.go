package chunks

import (
	"bytes"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Keys is a chunk of n records, each of its own trace id ("t" and nine
// digits): grouped by traceId, every record opens a group of its own. The
// records are small app-log lines a second apart.
func Keys(n int) []byte {
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	enc.SetSortMapKeys(true)
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range n {
		t := t0.Add(time.Duration(i) * time.Millisecond)
		var et [8]byte
		s, ns := uint32(t.Unix()), uint32(t.Nanosecond())
		et[0], et[1], et[2], et[3] = byte(s>>24), byte(s>>16), byte(s>>8), byte(s)
		et[4], et[5], et[6], et[7] = byte(ns>>24), byte(ns>>16), byte(ns>>8), byte(ns)
		_ = enc.EncodeArrayLen(2)
		_ = enc.EncodeArrayLen(2)
		_ = enc.EncodeExtHeader(0, 8)
		b.Write(et[:])
		_ = enc.EncodeMapLen(0)
		_ = enc.Encode(map[string]any{
			"level":   "info",
			"module":  "checkout",
			"msg":     "order placed",
			"traceId": fmt.Sprintf("t%09d", i),
			"ms":      i % 1000,
		})
	}
	return b.Bytes()
}
