package sink

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// maxParkedRaw bounds the raw bytes kept of one parked record, so the
// dead-letter document stays far below MongoDB's 16 MiB limit.
const maxParkedRaw = 1 << 20

// reducedRaw is the raw bytes kept of a record whose whole dead-letter
// document the server refused.
const reducedRaw = 1 << 10

// letter is one record to park: index is its index in the chunk, -1 for
// the corrupt rest.
type letter struct {
	key, reason, format string
	index               int
	t                   time.Time
	raw                 []byte
}

// park stores the records that cannot be stored normally in the
// dead-letter collection (of each, with templates), each with its reason.
func (s *Sink) park(ctx context.Context, f *flush, res *Result) error {
	b := f.batch
	var letters []letter
	for _, bad := range b.Bad {
		letters = append(letters, letter{fmt.Sprint(bad.Index), bad.Reason, "msgpack", bad.Index, bad.Time, bad.Raw})
	}
	var byIndex map[int]int // position in b.Records by record index
	if len(f.parked) > 0 {
		byIndex = make(map[int]int, len(b.Records))
		for i := range b.Records {
			byIndex[b.Records[i].Index] = i
		}
		for _, p := range f.parked {
			if i, ok := byIndex[p.Index]; ok {
				r := &b.Records[i]
				letters = append(letters, letter{fmt.Sprint(p.Index), p.Reason, "bson", p.Index, r.Time, r.Doc})
			}
		}
	}
	if c := b.Corrupt; c != nil {
		letters = append(letters, letter{fmt.Sprintf("corrupt@%d", c.Offset), c.Error(), "msgpack", -1, time.Time{}, b.Rest})
	}
	res.Parked = len(letters)
	if len(letters) == 0 {
		return nil
	}
	collOf := s.deadLetterOf(f, byIndex)
	var colls []string
	byColl := map[string][]letter{}
	for _, l := range letters {
		c := collOf(&l)
		if byColl[c] == nil {
			colls = append(colls, c)
		}
		byColl[c] = append(byColl[c], l)
	}
	for _, c := range colls {
		if err := s.parkIn(ctx, f, c, byColl[c]); err != nil {
			return err
		}
	}
	return nil
}

// parkIn stores letters in dead-letter collection coll. A dead-letter
// document the server refuses is stored reduced (reason, sizes, the first
// bytes); if even that is refused, the chunk is retried: nothing is
// dropped.
func (s *Sink) parkIn(ctx context.Context, f *flush, coll string, letters []letter) error {
	if err := s.prepare(ctx, coll, true); err != nil {
		return err
	}
	now := time.Now().UTC()
	docs := make([]writer.Doc, len(letters))
	for i, l := range letters {
		docs[i] = s.deadLetter(f, l, now, maxParkedRaw, "")
	}
	ins, err := writer.InsertLetters(ctx, s.store, coll, docs, s.retry)
	if err != nil {
		return fmt.Errorf("parking %d records: %w", len(letters), err)
	}
	f.found = f.found || ins.Existed > 0
	if refused := ins.Refused; len(refused) > 0 {
		reduced := make([]writer.Doc, len(refused))
		for i, r := range refused {
			reduced[i] = s.deadLetter(f, letters[r.Index], now, reducedRaw, r.Reason)
		}
		again, err := writer.InsertLetters(ctx, s.store, coll, reduced, s.retry)
		if err != nil {
			return fmt.Errorf("parking %d reduced records: %w", len(reduced), err)
		}
		f.found = f.found || again.Existed > 0
		if len(again.Refused) > 0 {
			return fmt.Errorf("dead-letter collection %s refuses even a reduced record: %s", coll, again.Refused[0].Reason)
		}
		s.log.Warnf("dead-letter collection %s refused %d records whole (first: %s); stored them reduced to their reason, sizes and first %d bytes",
			coll, len(refused), refused[0].Reason, reducedRaw)
	}
	s.log.Warnf("chunk %s (tag %q): %d records parked in %s (first reason: %s)", f.id, f.tag, len(letters), coll, letters[0].reason)
	return nil
}

// deadLetter is the dead-letter document of l, keeping at most limit raw
// bytes. refused, when set, is why the server refused the whole document;
// the reduced document then has only valid UTF-8 strings of bounded size.
func (s *Sink) deadLetter(f *flush, l letter, now time.Time, limit int, refused string) writer.Doc {
	text := func(v string) string { return v }
	if refused != "" {
		text = func(v string) string {
			if len(v) > reducedRaw {
				v = v[:reducedRaw]
			}
			return strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	docID := f.id + ":" + l.key
	d := bsoncore.NewDocumentBuilder().
		AppendString(model.ID, docID).
		AppendString(s.opt.TagKey, text(f.tag)).
		AppendString(model.Reason, text(l.reason)).
		AppendString(model.Chunk, f.id).
		AppendDateTime(model.ParkedAt, now.UnixMilli())
	if !l.t.IsZero() {
		d.AppendDateTime(s.opt.Decoder.TimeKey, l.t.UnixMilli())
	}
	d.AppendString(model.Format, l.format).AppendInt64(model.Size, int64(len(l.raw)))
	raw := l.raw
	if len(raw) > limit {
		raw = raw[:limit]
		d.AppendBoolean(model.Truncated, true)
	}
	if refused != "" {
		d.AppendString(model.Refused, text(refused))
	}
	d.AppendBinary(model.Raw, 0, raw)
	return writer.Doc{ID: bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, docID)}, Raw: bson.Raw(d.Build())}
}
