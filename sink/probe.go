package sink

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// holds reports whether anything of generation gen of a content is
// stored: in its buckets or flat documents, or in the dead letters.
func (s *Sink) holds(ctx context.Context, content string, gen int, tag string, batch *parser.Batch) (bool, error) {
	id := GenID(content, gen)
	f := &flush{id: id, tag: tag, batch: batch, prev: &memo{}, limits: map[string]int{}}
	colls, parts := s.route(f)
	if s.opt.Mode == ModeFlat {
		s.reid(batch, id)
	}
	for i, coll := range colls {
		if s.opt.Mode == ModeFlat {
			// Documents with their own id (id_key) are stored whatever
			// the generation: they say nothing of which one is.
			ids := make([]bsoncore.Value, 0, len(parts[i]))
			for j := range parts[i] {
				if _, own, _ := s.idOf(parts[i][j].Doc); !own {
					ids = append(ids, parts[i][j].Doc.Lookup(model.ID))
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
		stored, err := s.buckets.Stored(ctx, id, s.groupsIn(coll, tag, parts[i]))
		if err != nil || len(stored) > 0 {
			return len(stored) > 0, err
		}
	}
	lo, hi := id+":", id+";" // dead-letter ids are id:key
	filter := bson.Raw(bsoncore.NewDocumentBuilder().AppendDocument(model.ID, bsoncore.NewDocumentBuilder().
		AppendString("$gte", lo).AppendString("$lt", hi).Build()).Build())
	var docs []bson.Raw
	err := s.retry.Do(ctx, func() (err error) {
		docs, err = s.store.Find(ctx, s.opt.DeadLetter, filter, writer.Query{Projection: writer.IDProjection, Limit: 1})
		return err
	})
	return len(docs) > 0, err
}
