package writer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Layout says how a collection is set up.
type Layout struct {
	Keys       bson.D // the lookup index, e.g. {key: 1, start: 1}; nil: none
	TTL        bool   // a TTL index on expireAt
	CappedSize int64  // create the collection capped at this size; 0: not capped
	ShardKey   bson.D // shard the collection on this key before its first write; nil: not
}

// ShardCollection shards coll on key. Sharding an empty collection creates
// it with the index the key needs; sharding it again on the same key is a
// no-op. A server that is not a sharded cluster answers with an error.
func ShardCollection(ctx context.Context, db *mongo.Database, coll string, key bson.D) error {
	cmd := bson.D{{Key: "shardCollection", Value: db.Name() + "." + coll}, {Key: "key", Value: key}}
	return db.Client().Database("admin").RunCommand(ctx, cmd).Err()
}

// FormatKeys renders an index or shard key as a user writes it:
// {key: 1, start: 1}.
func FormatKeys(keys bson.D) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", e.Key, e.Value)
	}
	b.WriteByte('}')
	return b.String()
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
			return fmt.Errorf("creating index %s on %s: %w", FormatKeys(l.Keys), coll, err)
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

// DropOldPartitions drops the partitions of p whose whole period lies
// before the kept range at now (see Partitions), and returns the names it
// dropped. Partitions of later periods, even of the future, are kept.
func DropOldPartitions(ctx context.Context, db *mongo.Database, p Partitions, now time.Time) ([]string, error) {
	if p.Keep <= 0 {
		return nil, nil
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	oldest := p.Name(p.Oldest(now)) // the names sort as their periods
	var dropped []string
	for _, n := range names {
		if !isPartition(n, p.Base, p.Layout) || n >= oldest {
			continue
		}
		if err := db.Collection(n).Drop(ctx); err != nil {
			return dropped, fmt.Errorf("dropping partition %s: %w", n, err)
		}
		dropped = append(dropped, n)
	}
	slices.Sort(dropped)
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

// Partitions names the time-partitioned collections of one base collection:
// Base + "_" + the UTC period of a record's time in Layout ("20060102" for
// days, "200601" for months). Keep, when above 0, is how many periods are
// kept, counted back from the current one: the kept range starts Keep-1
// periods before the period of now, whatever the records' times say.
type Partitions struct {
	Base   string
	Layout string
	Keep   int
}

// MonthLayout is the layout of monthly partitions; any other is daily.
const MonthLayout = "200601"

// Name is the partition of time t.
func (p Partitions) Name(t time.Time) string { return p.Base + "_" + t.UTC().Format(p.Layout) }

// Oldest is the start of the oldest kept period at now; zero when every
// period is kept.
func (p Partitions) Oldest(now time.Time) time.Time {
	if p.Keep <= 0 {
		return time.Time{}
	}
	y, m, d := now.UTC().Date()
	if p.Layout == MonthLayout {
		return time.Date(y, m-time.Month(p.Keep-1), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(y, m, d-(p.Keep-1), 0, 0, 0, 0, time.UTC)
}
