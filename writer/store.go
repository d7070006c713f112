package writer

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Store is the narrow set of MongoDB calls the writer makes. The real one
// wraps a driver database; tests wrap it to inject faults.
type Store interface {
	// Upsert runs one update with upsert on and reports whether it
	// inserted a new document.
	Upsert(ctx context.Context, coll string, filter, update bson.Raw) (created bool, err error)
	// Find returns the documents matching filter, projected.
	Find(ctx context.Context, coll string, filter, projection bson.Raw) ([]bson.Raw, error)
	// InsertMany inserts docs, unordered.
	InsertMany(ctx context.Context, coll string, docs []bson.Raw) error
}

// MongoStore is the Store of one MongoDB database.
type MongoStore struct {
	DB *mongo.Database
}

func (s MongoStore) Upsert(ctx context.Context, coll string, filter, update bson.Raw) (bool, error) {
	res, err := s.DB.Collection(coll).UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	if err != nil {
		return false, err
	}
	return res.UpsertedCount > 0, nil
}

func (s MongoStore) Find(ctx context.Context, coll string, filter, projection bson.Raw) ([]bson.Raw, error) {
	cur, err := s.DB.Collection(coll).Find(ctx, filter, options.Find().SetProjection(projection))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	return out, cur.Err()
}

func (s MongoStore) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := s.DB.Collection(coll).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	return err
}
