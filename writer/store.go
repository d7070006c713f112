package writer

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
)

// Store is the narrow set of MongoDB calls the writer makes. The real one
// wraps a driver database; tests wrap it to inject faults.
type Store interface {
	// Upserts runs ups, updates of distinct documents (upserts where
	// Insert), as one unordered command and returns each statement's
	// error: nil only when the reply shows the statement applied (see
	// Unconfirmed), errkind.Missed when it shows an update matched nothing.
	Upserts(ctx context.Context, coll string, ups []Upsert) []error
	// Find returns the documents matching filter, shaped by q.
	Find(ctx context.Context, coll string, filter bson.Raw, q Query) ([]bson.Raw, error)
	// InsertMany inserts docs, unordered.
	InsertMany(ctx context.Context, coll string, docs []bson.Raw) error
	// Replace replaces, unordered, the document of each doc's _id with the
	// doc whole, inserting it when there is none (an upsert replacement,
	// not a merge of fields), under VersionGuard: a doc with a version
	// replaces only an older one, and fails DuplicateKey otherwise. Its
	// errors are InsertMany's: a mongo.BulkWriteException names the
	// statements that failed.
	Replace(ctx context.Context, coll string, docs []bson.Raw) error
	// UpdateMany applies update to every document filter matches,
	// inserting none.
	UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error
	// Ping asks the server for an answer on a connection of the pool, so
	// that a write the server keeps dropping the connection on can be told
	// from a server that is gone.
	Ping(ctx context.Context) error
}

// Upsert is one statement of an update command: an update of the document
// Filter matches; with Insert, inserting it when none does. Without
// Insert, a statement that matches nothing fails with errkind.Missed.
type Upsert struct {
	Filter, Update bson.Raw
	Insert         bool
}

// Query shapes a Find: the fields returned, the order, and how many.
type Query struct {
	Projection bson.Raw // nil: whole documents
	Sort       bson.Raw // nil: any order
	Limit      int64    // 0: all
}

// MongoStore is the Store of one MongoDB database, or with Qualified of
// any database of its client.
type MongoStore struct {
	DB *mongo.Database
	// Qualified: collection names are "<database>.<collection>" (see
	// SplitNamespace).
	Qualified bool
	// Majority reads with read concern majority: a write whose write
	// concern failed is then confirmed by a read only once a majority of
	// the replica set holds it. Set it with write_concern majority.
	Majority bool
}

// SplitNamespace splits "<database>.<collection>" at its first dot (a
// database name has none).
func SplitNamespace(ns string) (db, coll string) {
	db, coll, _ = strings.Cut(ns, ".")
	return db, coll
}

// collection is the collection the store names coll.
func (s MongoStore) collection(coll string, opts ...options.Lister[options.CollectionOptions]) *mongo.Collection {
	if s.Qualified {
		db, c := SplitNamespace(coll)
		return s.DB.Client().Database(db).Collection(c, opts...)
	}
	return s.DB.Collection(coll, opts...)
}

func (s MongoStore) Upserts(ctx context.Context, coll string, ups []Upsert) []error {
	errs := make([]error, len(ups))
	c := s.collection(coll)
	if len(ups) == 1 {
		var res *mongo.UpdateResult
		res, errs[0] = c.UpdateOne(ctx, ups[0].Filter, ups[0].Update, options.UpdateOne().SetUpsert(ups[0].Insert))
		if errs[0] == nil && res.MatchedCount == 0 && res.UpsertedCount == 0 {
			errs[0] = errkind.Missed
		}
		return errs
	}
	models := make([]mongo.WriteModel, len(ups))
	for i, u := range ups {
		models[i] = mongo.NewUpdateOneModel().SetFilter(u.Filter).SetUpdate(u.Update).SetUpsert(u.Insert)
	}
	res, err := c.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return Outcomes(ups, res, err)
}

func (s MongoStore) Find(ctx context.Context, coll string, filter bson.Raw, q Query) ([]bson.Raw, error) {
	var copts []options.Lister[options.CollectionOptions]
	if s.Majority {
		copts = append(copts, options.Collection().SetReadConcern(readconcern.Majority()))
	}
	fo := options.Find()
	if q.Projection != nil {
		fo.SetProjection(q.Projection)
	}
	if q.Sort != nil {
		fo.SetSort(q.Sort)
	}
	if q.Limit > 0 {
		fo.SetLimit(q.Limit)
	}
	cur, err := s.collection(coll, copts...).Find(ctx, filter, fo)
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
	_, err := s.collection(coll).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	return err
}

func (s MongoStore) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		models[i] = mongo.NewReplaceOneModel().SetFilter(VersionGuard(d)).SetReplacement(d).SetUpsert(true)
	}
	_, err := s.collection(coll).BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

func (s MongoStore) UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error {
	_, err := s.collection(coll).UpdateMany(ctx, filter, update)
	return err
}

func (s MongoStore) Ping(ctx context.Context) error {
	return s.DB.Client().Ping(ctx, readpref.Primary())
}
