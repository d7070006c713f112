package layout

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Places are where one output writes, as its names give them: a database,
// or every database a template can give, and in each the collection, or
// every collection a template can give, with its partitions.
type Places struct {
	Database string
	// DatabaseMatch, when set, reports whether a database name is one the
	// database template can give: the places are then every existing
	// database it matches.
	DatabaseMatch func(string) bool
	// CollectionMatch reports whether a collection name (without a
	// partition's suffix) is one the collection template can give.
	CollectionMatch func(string) bool
	// Partitions are the collection's partitions: Bases is CollectionMatch
	// when the collection is a template.
	Partitions Partitions
}

// Databases are the databases of pl: the database, or those existing
// whose names the template can give.
func (pl Places) Databases(ctx context.Context, client *mongo.Client) ([]string, error) {
	if pl.DatabaseMatch == nil {
		return []string{pl.Database}, nil
	}
	names, err := client.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("listing databases: %w", err)
	}
	var out []string
	for _, n := range names {
		if pl.DatabaseMatch(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Existing lists the targets of pl that exist already, as database and
// collection: in every database of pl, each collection whose name (for
// partitions, the name without the suffix) the collection template can
// give, once.
func (pl Places) Existing(ctx context.Context, client *mongo.Client) ([][2]string, error) {
	dbs, err := pl.Databases(ctx, client)
	if err != nil {
		return nil, err
	}
	p := pl.Partitions
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, db := range dbs {
		names, err := client.Database(db).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("listing the collections of %s: %w", db, err)
		}
		for _, n := range names {
			base, ok := n, pl.CollectionMatch != nil && pl.CollectionMatch(n)
			if p.Period != None {
				base, ok = p.Split(n)
			}
			if k := [2]string{db, base}; ok && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// DropOld drops, in every database of pl, the partitions whose whole
// period lies before the kept range at now (see DropOld), calling dropped
// for each. It stops at the first error.
func (pl Places) DropOld(ctx context.Context, client *mongo.Client, now time.Time, dropped func(db, coll string)) error {
	dbs, err := pl.Databases(ctx, client)
	for _, db := range dbs {
		var names []string
		names, err = DropOld(ctx, client.Database(db), pl.Partitions, now)
		for _, n := range names {
			dropped(db, n)
		}
		if err != nil {
			break
		}
	}
	return err
}

// Owns reports whether collection name is one of pl's targets: the
// collection, or one the template can give, or with partitions a
// partition of one.
func (pl Places) Owns(name string) bool {
	switch {
	case pl.Partitions.Period != None:
		return pl.Partitions.Owns(name)
	case pl.CollectionMatch != nil:
		return pl.CollectionMatch(name)
	}
	return name == pl.Partitions.Base
}

// Collections lists the collections that exist in every database of pl
// and that match reports true for, as database and collection, in the
// order the server lists them.
func (pl Places) Collections(ctx context.Context, client *mongo.Client, match func(name string) bool) ([][2]string, error) {
	dbs, err := pl.Databases(ctx, client)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, db := range dbs {
		names, err := client.Database(db).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("listing the collections of %s: %w", db, err)
		}
		for _, n := range names {
			if match(n) {
				out = append(out, [2]string{db, n})
			}
		}
	}
	return out, nil
}
