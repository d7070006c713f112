package sink

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// holds reports whether anything of generation gen of a content is
// stored: in its buckets or flat documents, or in the dead letters.
func (s *Sink) holds(ctx context.Context, content string, gen int, tag string, batch *parser.Batch, dests *routes) (bool, error) {
	id := GenID(content, gen)
	f := &flush{id: id, tag: tag, batch: batch, dests: dests, prev: &memo{}, limits: map[string]int{}}
	colls, parts := s.route(f)
	if s.opt.Mode == model.ModeFlat {
		s.reid(batch, id)
	}
	for i, coll := range colls {
		if s.opt.Mode == model.ModeFlat {
			// Documents with their own id (id_key) are stored whatever
			// the generation: they say nothing of which one is.
			recs := part(batch, parts, i)
			ids := make([]bsoncore.Value, 0, len(recs))
			for _, r := range recs {
				if _, own, _ := s.idOf(r.Doc); !own {
					ids = append(ids, r.Doc.Lookup(model.ID))
				}
			}
			if len(ids) == 0 {
				continue
			}
			if n, err := writer.Existing(ctx, s.store, coll, ids, s.retry); err != nil || n > 0 {
				return n > 0, err
			}
			continue
		}
		stored, err := s.buckets.Stored(ctx, id, s.groupsIn(coll, tag, batch, parts, i))
		if err != nil || len(stored) > 0 {
			return len(stored) > 0, err
		}
	}
	filter := deadLettersOf(id)
	for _, dl := range s.deadLetters(f) {
		var docs []bson.Raw
		err := s.retry.Do(ctx, func() (err error) {
			docs, err = s.store.Find(ctx, dl, filter, writer.Query{Projection: writer.IDProjection, Limit: 1})
			return err
		})
		if err != nil || len(docs) > 0 {
			return len(docs) > 0, err
		}
	}
	return false, nil
}

// parkedBefore reads which records of f's generation earlier attempts
// parked, in the dead letters: they are parked again (an insert that finds
// them counts them), never written, whatever this process remembers.
func (s *Sink) parkedBefore(ctx context.Context, f *flush) error {
	filter := deadLettersOf(f.id)
	proj := bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32(model.ID, 1).AppendInt32(model.Reason, 1).Build())
	var known map[int]string
	for _, dl := range s.deadLetters(f) {
		var docs []bson.Raw
		err := s.retry.Do(ctx, func() (err error) {
			docs, err = s.store.Find(ctx, dl, filter, writer.Query{Projection: proj})
			return err
		})
		if err != nil {
			return fmt.Errorf("looking for records of chunk %s parked before in %s: %w", f.id, dl, err)
		}
		for _, d := range docs {
			id, _ := d.Lookup(model.ID).StringValueOK()
			i, err := strconv.Atoi(strings.TrimPrefix(id, f.id+":"))
			if err != nil {
				continue // the corrupt rest: parked from the chunk's bytes each time
			}
			if known == nil {
				known = maps.Clone(f.prev.known)
				if known == nil {
					known = map[int]string{}
				}
			}
			if known[i] == "" {
				known[i], _ = d.Lookup(model.Reason).StringValueOK()
			}
		}
	}
	if known != nil {
		prev := *f.prev
		prev.known = known
		f.prev = &prev
	}
	return nil
}

// deadLettersOf selects the dead letters of chunk id: their ids are
// id:key.
func deadLettersOf(id string) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument(model.ID, bsoncore.NewDocumentBuilder().
		AppendString("$gte", id+":").AppendString("$lt", id+";").Build()).Build())
}

// deadLetters lists the dead-letter collections the records of f may be
// parked in, each once.
func (s *Sink) deadLetters(f *flush) []string {
	if s.router == nil {
		return []string{s.opt.DeadLetter}
	}
	of := s.deadLetterOf(f, nil)
	seen := map[string]bool{}
	var out []string
	add := func(l letter) {
		if c := of(&l); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	add(letter{index: -1})
	for i := range f.batch.Records {
		add(letter{index: f.batch.Records[i].Index})
	}
	return out
}
