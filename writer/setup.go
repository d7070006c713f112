package writer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Layout says how a collection is set up.
type Layout struct {
	Keys       bson.D // the lookup index, e.g. {key: 1, start: 1}; nil: none
	TTL        bool   // a TTL index on expireAt
	CappedSize int64  // create the collection capped at this size; 0: not capped
}

// CreateCapped creates coll as a capped collection of size bytes, unless it
// exists already (then it is left as it is).
func CreateCapped(ctx context.Context, db *mongo.Database, coll string, size int64) error {
	err := db.CreateCollection(ctx, coll, options.CreateCollection().SetCapped(true).SetSizeInBytes(size))
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.HasErrorCode(48) { // NamespaceExists
		return nil
	}
	return err
}

// EnsureIndexes creates the lookup and TTL indexes of l on coll (creating
// an existing index is a no-op).
func EnsureIndexes(ctx context.Context, db *mongo.Database, coll string, l Layout) error {
	iv := db.Collection(coll).Indexes()
	if l.Keys != nil {
		if _, err := iv.CreateOne(ctx, mongo.IndexModel{Keys: l.Keys}); err != nil {
			return fmt.Errorf("creating index %v on %s: %w", l.Keys, coll, err)
		}
	}
	if l.TTL {
		m := mongo.IndexModel{
			Keys:    bson.D{{Key: "expireAt", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0),
		}
		if _, err := iv.CreateOne(ctx, m); err != nil {
			return fmt.Errorf("creating TTL index on %s.expireAt (documents will not expire): %w", coll, err)
		}
	}
	return nil
}

// DropOldPartitions drops the partitions of base (collections named
// base + "_" + digits of the layout's length) beyond the keep newest, and
// returns the names it dropped.
func DropOldPartitions(ctx context.Context, db *mongo.Database, base, layout string, keep int) ([]string, error) {
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, n := range names {
		if isPartition(n, base, layout) {
			parts = append(parts, n)
		}
	}
	slices.Sort(parts) // the dates sort as text
	if len(parts) <= keep {
		return nil, nil
	}
	var dropped []string
	for _, n := range parts[:len(parts)-keep] {
		if err := db.Collection(n).Drop(ctx); err != nil {
			return dropped, fmt.Errorf("dropping partition %s: %w", n, err)
		}
		dropped = append(dropped, n)
	}
	return dropped, nil
}

// isPartition reports whether name is a partition of base for layout.
func isPartition(name, base, layout string) bool {
	digits, ok := strings.CutPrefix(name, base+"_")
	if !ok || len(digits) != len(layout) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
