package writer

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Layout says which indexes a collection needs.
type Layout struct {
	Collection string
	Keys       bson.D // the lookup index, e.g. {key: 1, start: 1}
	TTL        bool   // a TTL index on expireAt
}

// EnsureIndexes creates the lookup and TTL indexes of l (creating an
// existing index is a no-op). A server that lacks TTL indexes is reported,
// not fatal: the data is still written.
func EnsureIndexes(ctx context.Context, db *mongo.Database, l Layout) error {
	iv := db.Collection(l.Collection).Indexes()
	if _, err := iv.CreateOne(ctx, mongo.IndexModel{Keys: l.Keys}); err != nil {
		return fmt.Errorf("creating index %v on %s: %w", l.Keys, l.Collection, err)
	}
	if l.TTL {
		m := mongo.IndexModel{
			Keys:    bson.D{{Key: "expireAt", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0),
		}
		if _, err := iv.CreateOne(ctx, m); err != nil {
			return fmt.Errorf("creating TTL index on %s.expireAt (documents will not expire): %w", l.Collection, err)
		}
	}
	return nil
}
