package parser

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// arenaFactor bounds the BSON written per input byte. The worst expansions
// are small values in arrays (1 byte -> type, index name, int32: about 12
// bytes), tiny ext values (3 bytes -> a {type, data} document of about 30)
// and, per record, the time element a 3-byte record gets.
const arenaFactor = 16

// fuzzDecoders are the option sets every fuzz input is decoded with.
func fuzzDecoders(t testing.TB) []*Decoder {
	return []*Decoder{
		mustDecoder(t, Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"}),
		mustDecoder(t, Options{
			TimeKey: "time", KeepMetadata: true, Reserved: []string{"_id", "tag"},
			Include: []string{"log", "a.b", "msg", "level", "host", "code"}, Exclude: []string{"a.b.c"},
			MaxRecordBytes: 4096,
		}),
		mustDecoder(t, Options{
			TimeKey: "ts", Line: mustLineParser(t, "json", ""), ParseKey: "log", TimeFromLog: true,
			Types: map[string]Kind{"code": KindInt, "size": KindInt, "ok": KindBool, "at": KindTime},
		}),
		mustDecoder(t, Options{
			TimeKey: "ts", Line: mustLineParser(t, "apache_combined", ""), ParseKey: "log",
			KeepMetadata: true, TimeFromLog: true,
		}),
	}
}

// checkBatch checks the invariants of any decoded batch.
func checkBatch(t *testing.T, d *Decoder, chunk []byte, b *Batch) {
	t.Helper()
	last := -1
	for _, r := range b.Records {
		if err := r.Doc.Validate(); err != nil {
			t.Fatalf("record %d: invalid BSON: %v", r.Index, err)
		}
		if s := checkNames(r.Doc, &d.reserved, true); s != "" {
			t.Fatalf("record %d: %s", r.Index, s)
		}
		if first, err := r.Doc.IndexErr(0); err != nil || first.Key() != d.opt.TimeKey {
			t.Fatalf("record %d does not start with the time key", r.Index)
		}
		if len(r.Doc) > d.maxBytes {
			t.Fatalf("record %d: %d bytes over the limit", r.Index, len(r.Doc))
		}
		if r.Index <= last {
			t.Fatalf("record index %d after %d", r.Index, last)
		}
		last = r.Index
	}
	for _, bad := range b.Bad {
		if bad.Offset < 0 || bad.Offset+len(bad.Raw) > len(chunk) || !bytes.Equal(chunk[bad.Offset:bad.Offset+len(bad.Raw)], bad.Raw) || len(bad.Raw) == 0 {
			t.Fatalf("bad record %d: offset %d, %d raw bytes", bad.Index, bad.Offset, len(bad.Raw))
		}
		if bad.Reason == "" {
			t.Fatalf("bad record %d without a reason", bad.Index)
		}
	}
	if c := b.Corrupt; c != nil {
		if c.Offset < 0 || c.Offset >= len(chunk) || !bytes.Equal(b.Rest, chunk[c.Offset:]) || c.Index <= last {
			t.Fatalf("corrupt %v, rest %d bytes", c, len(b.Rest))
		}
		if len(b.Bad) > 0 && b.Bad[len(b.Bad)-1].Index >= c.Index {
			t.Fatalf("bad record after the corrupt one")
		}
	}
	if limit := arenaFactor*len(chunk) + 4096; cap(b.arena) > limit {
		t.Fatalf("arena %d bytes for %d input bytes (limit %d)", cap(b.arena), len(chunk), limit)
	}
}

func FuzzDecode(f *testing.F) {
	// Seeds are in testdata/fuzz/FuzzDecode: the small fixtures and slices
	// of the big ones. A few hand-made edge cases are added here.
	f.Add(rec(f, evt(1, 0), kv{"m", 1}, kv{"a.b", kv{"c", 1, "$d", []any{1.5, nil, true}}, "log", `{"x":1}`}))
	f.Add(recV1(f, 1717236000, kv{"code", "200", "size", "-", "", []byte("\xff")}))
	f.Add(rec(f, 1.5, kv{}, kv{"x", deep(MaxDepth + 1)}))
	f.Add(append(rec(f, evt(1, 0), kv{}, kv{"a", 1}), 0xc1))
	decoders := fuzzDecoders(f)
	f.Fuzz(func(t *testing.T, chunk []byte) {
		for _, d := range decoders {
			var b Batch
			done := make(chan struct{})
			go func() {
				defer close(done)
				d.Decode(chunk, nil, &b)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Decode of %d bytes did not return", len(chunk))
			}
			checkBatch(t, d, chunk, &b)
		}
	})
}

// FuzzMsgpackSkip checks reader.skip against vmihailenco/msgpack's Skip: on
// any input it does not panic, stays in bounds, and where both succeed they
// end at the same byte.
func FuzzMsgpackSkip(f *testing.F) {
	for _, name := range []string{"chunk-dummy-3.msgpack", "chunk-dummy-metadata-2.msgpack", "chunk-nginx-8.msgpack"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc7, 0x01, 0x00, 0x01})
	f.Add([]byte{0x92, 0xc1, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := reader{buf: in}
		err := r.skip()
		if r.pos < 0 || r.pos > len(in) {
			t.Fatalf("pos %d out of 0..%d", r.pos, len(in))
		}
		if err != nil && !errors.Is(err, errTruncated) && in[r.pos-1] != 0xc1 {
			t.Fatalf("error %v at %d (byte % x)", err, r.pos, in[r.pos-1])
		}
		br := bytes.NewReader(in)
		refErr := msgpack.NewDecoder(br).Skip()
		switch {
		case err == nil && refErr == nil:
			if end := len(in) - br.Len(); end != r.pos {
				t.Fatalf("skip ends at %d, reference at %d", r.pos, end)
			}
		case err == nil:
			t.Fatalf("skip succeeded at %d, reference failed: %v", r.pos, refErr)
		case refErr == nil:
			t.Fatalf("skip failed (%v), reference succeeded at %d", err, len(in)-br.Len())
		}
	})
}
