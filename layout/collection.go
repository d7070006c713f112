package layout

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
)

// Logger is where the keeper reports.
type Logger interface {
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
	Debugf(format string, args ...any)
}

// Spec is how the plugin creates and keeps one collection.
type Spec struct {
	Keys bson.D // the lookup index, e.g. {key: 1, start: 1}; nil: none
	// Extra are the user's indexes (indexes), created beside the
	// plugin's own; one the server refuses gets a warning.
	Extra []bson.D
	// TTLField, when set, gets a TTL index deleting documents TTL after
	// the date the field holds. An existing index on the field with
	// another TTL (or none) is changed in place with collMod.
	TTLField string
	TTL      time.Duration
	// ExpireAt, when set, computes a stored document's expireAt from its
	// fields: the backfill gives it to documents without one. Projection
	// is what it reads of each document (nil: all).
	ExpireAt   func(doc bson.Raw) (time.Time, bool)
	Projection bson.D
	CappedSize int64 // create the collection capped at this size; 0: not capped
	CappedMax  int64 // and at this many documents; 0: no limit
	// Compression is the storage engine's block compressor for a
	// collection the plugin creates; "": the server's default.
	Compression string
	Validator   bson.D // a validator for a collection the plugin creates; nil: none
	ShardKey    bson.D // shard the collection on this key before its first write
}

// Required is a Prepare error that must hold up writes to the collection:
// a capped collection must exist before the first insert creates it
// uncapped, and a shard key must be in place before the first write.
type Required struct{ Err error }

func (e *Required) Error() string { return e.Err.Error() }
func (e *Required) Unwrap() error { return e.Err }

// Limits pace the keeper's background work.
type Limits struct {
	// BurstLimit: a TTL change that would expire more documents at once
	// deletes them first, at Rate.
	BurstLimit int64
	Rate       int // documents per second deleted, or given an expireAt
	Batch      int // statements per update command
}

// Keeper prepares collections before their first write and runs the
// background work that a TTL change or a TTL turned on needs. Background
// work stops when the context given to NewKeeper ends; Wait waits for it.
type Keeper struct {
	db     *mongo.Database
	runner Runner // the commands that change an index (collMod)
	log    Logger
	limits Limits
	ctx    context.Context
	bg     sync.WaitGroup

	mu      sync.Mutex
	warned  map[string]bool // by what the warning is about
	running map[string]bool // background work by collection and kind
	ttlMu   map[string]*sync.Mutex
	ttlBy   map[string]string // who applied a collection's TTL (see onceTTL)
}

// NewKeeper returns a keeper of the collections of db.
func NewKeeper(ctx context.Context, db *mongo.Database, log Logger, limits Limits) *Keeper {
	limits.Rate = max(limits.Rate, 1)
	limits.Batch = max(limits.Batch, 1)
	return &Keeper{db: db, runner: dbRunner{db}, log: log, limits: limits, ctx: ctx, warned: map[string]bool{}, running: map[string]bool{},
		ttlMu: map[string]*sync.Mutex{}, ttlBy: map[string]string{}}
}

// Runner runs a database command and returns the error it ends with. The
// keeper changes indexes (collMod) through one.
type Runner interface {
	Run(ctx context.Context, cmd bson.D) error
}

type dbRunner struct{ db *mongo.Database }

func (r dbRunner) Run(ctx context.Context, cmd bson.D) error { return r.db.RunCommand(ctx, cmd).Err() }

// WrapRunner makes the keeper send its collMod commands through wrap of
// the database's runner (fault injection in tests). Call it before
// Prepare.
func (k *Keeper) WrapRunner(wrap func(Runner) Runner) { k.runner = wrap(k.runner) }

// Wait waits for the background work, which ends with the keeper's
// context.
func (k *Keeper) Wait() { k.bg.Wait() }

// warnOnce logs a warning the first time about says it, then at debug.
func (k *Keeper) warnOnce(about, format string, args ...any) {
	k.mu.Lock()
	first := !k.warned[about]
	k.warned[about] = true
	k.mu.Unlock()
	if first {
		k.log.Warnf(format, args...)
	} else {
		k.log.Debugf(format, args...)
	}
}

// background runs fn once per collection and kind at a time.
func (k *Keeper) background(coll, kind string, fn func(ctx context.Context)) {
	key := coll + "\x00" + kind
	k.mu.Lock()
	if k.running[key] {
		k.mu.Unlock()
		return
	}
	k.running[key] = true
	k.mu.Unlock()
	k.bg.Add(1)
	go func() {
		defer k.bg.Done()
		defer func() {
			if r := recover(); r != nil {
				k.log.Warnf("%s of %s stopped: panic: %v", kind, coll, r)
			}
			k.mu.Lock()
			delete(k.running, key)
			k.mu.Unlock()
		}()
		fn(k.ctx)
	}()
}

// Prepare sets coll up before its first write: sharding and creation
// (which must succeed when capped or sharded), then indexes and TTL. A
// server that refuses an option gets one warning per collection and
// writing goes on without it (errkind's Refusal). An error that is not
// *Required is returned as it is: the caller waits for one that is
// passing (no answer, an election) and writes anyway after any other.
func (k *Keeper) Prepare(ctx context.Context, coll string, s Spec) error {
	if s.ShardKey != nil {
		if err := k.shard(ctx, coll, s.ShardKey); err != nil {
			return err
		}
	}
	if err := k.create(ctx, coll, s); err != nil {
		return err
	}
	if s.Keys != nil {
		if _, err := k.db.Collection(coll).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: s.Keys}); err != nil {
			return fmt.Errorf("creating index %s on %s: %w", FormatKeys(s.Keys), coll, err)
		}
	}
	for _, keys := range s.Extra {
		_, err := k.db.Collection(coll).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys})
		switch {
		case errkind.Of(err).Refusal():
			k.warnOnce("index\x00"+coll+"\x00"+FormatKeys(keys), "the server refused index %s on %s (indexes): %v", FormatKeys(keys), coll, err)
		case err != nil:
			return fmt.Errorf("creating index %s on %s: %w", FormatKeys(keys), coll, err)
		}
	}
	if s.TTLField != "" && s.TTL > 0 {
		if err := k.ensureTTL(ctx, coll, s); err != nil {
			return err
		}
	}
	return nil
}

func (k *Keeper) shard(ctx context.Context, coll string, key bson.D) error {
	cmd := bson.D{{Key: "shardCollection", Value: k.db.Name() + "." + coll}, {Key: "key", Value: key}}
	err := k.db.Client().Database("admin").RunCommand(ctx, cmd).Err()
	switch {
	case errkind.Of(err).Refusal():
		// The server answered no: not a sharded cluster, not allowed.
		k.warnOnce("shard_key", "shard_key: the server refused to shard %s on %s: %v (writing unsharded; further refusals are logged at debug)",
			coll, FormatKeys(key), err)
	case err != nil:
		return &Required{Err: fmt.Errorf("sharding collection %s: %w", coll, err)}
	default:
		k.log.Infof("sharded collection %s on %s", coll, FormatKeys(key))
	}
	return nil
}

// create creates coll with the options of s, when it has any and coll does
// not exist. Options the server refuses are dropped with a warning, except
// capping, without which the collection must not be written. Options the
// server accepts and ignores get a warning too (checkCreated), and so does
// capped_size on a collection that exists uncapped (checkExisting).
func (k *Keeper) create(ctx context.Context, coll string, s Spec) error {
	capped := options.CreateCollection()
	if s.CappedSize > 0 {
		capped.SetCapped(true).SetSizeInBytes(s.CappedSize)
		if s.CappedMax > 0 {
			capped.SetMaxDocuments(s.CappedMax)
		}
	}
	var extras []string
	var opts []options.Lister[options.CreateCollectionOptions]
	if s.CappedSize > 0 {
		opts = append(opts, capped)
	}
	if s.Compression != "" {
		extras = append(extras, "compression "+s.Compression)
		opts = append(opts, options.CreateCollection().SetStorageEngine(bson.D{{Key: "wiredTiger",
			Value: bson.D{{Key: "configString", Value: "block_compressor=" + s.Compression}}}}))
	}
	if s.Validator != nil {
		extras = append(extras, "validate on")
		opts = append(opts, options.CreateCollection().SetValidator(s.Validator))
	}
	if len(opts) == 0 {
		return nil
	}
	// Looked up first: a server may answer ok to the create of a collection
	// that exists (MongoDB when the options are the same, FerretDB v2
	// always), and the read-back would then take it for one just created.
	if got, found, err := k.collOptions(ctx, coll); err != nil {
		k.log.Debugf("looking for collection %s before creating it: %v", coll, err)
	} else if found {
		k.checkExisting(coll, s, got)
		return nil
	}
	err := k.db.CreateCollection(ctx, coll, opts...)
	if exists(err) {
		k.recheckExisting(ctx, coll, s)
		return nil
	}
	asked := s
	if errkind.Of(err).Refusal() && len(extras) > 0 {
		k.warnOnce("create\x00"+coll, "the server refused to create %s with %s: %v (created without them)", coll, strings.Join(extras, ", "), err)
		if s.CappedSize == 0 {
			return nil
		}
		asked = Spec{CappedSize: s.CappedSize, CappedMax: s.CappedMax}
		if err = k.db.CreateCollection(ctx, coll, capped); exists(err) {
			k.recheckExisting(ctx, coll, s)
			return nil
		}
	}
	if err != nil && s.CappedSize > 0 {
		return &Required{Err: fmt.Errorf("creating capped collection %s: %w", coll, err)}
	}
	if err == nil {
		k.checkCreated(ctx, coll, asked)
	}
	return err
}

// checkCreated reads back the options coll was just created with (s's)
// and warns once per collection and option the server accepted but
// dropped: some MongoDB-compatible servers ignore them silently.
func (k *Keeper) checkCreated(ctx context.Context, coll string, s Spec) {
	got, found, err := k.collOptions(ctx, coll)
	if err != nil || !found {
		k.log.Debugf("reading back the options of %s: found %v, %v", coll, found, err)
		return
	}
	has := func(key string) bool { _, err := got.LookupErr(key); return err == nil }
	dropped := func(option, format string, args ...any) {
		k.warnOnce("created\x00"+coll+"\x00"+option, format, args...)
	}
	if capped, _ := got.Lookup("capped").BooleanOK(); s.CappedSize > 0 && !capped {
		dropped("capped", "the server created capped collection %s uncapped: it grows without bound; writing goes on "+
			"(capped_size %d bytes is ignored by this server: bound the collection with ttl or partition_keep instead)", coll, s.CappedSize)
	} else if s.CappedMax > 0 && !has("max") {
		dropped("max", "the server created capped collection %s without its document limit (capped_max %d): only its size bounds it", coll, s.CappedMax)
	}
	if s.Validator != nil && !has("validator") {
		dropped("validator", "the server created %s without its validator (validate on): documents are stored unchecked", coll)
	}
	if s.Compression != "" && !has("storageEngine") {
		dropped("storageEngine", "the server created %s without compression %s: the server's default compression applies", coll, s.Compression)
	}
}

// collOptions reads the options of coll (listCollections by name);
// found is false when there is no such collection.
func (k *Keeper) collOptions(ctx context.Context, coll string) (opts bson.Raw, found bool, err error) {
	specs, err := k.db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: coll}})
	if err != nil || len(specs) == 0 {
		return nil, false, err
	}
	return specs[0].Options, true, nil
}

// recheckExisting is checkExisting for a collection the create found
// there (made meanwhile by another writer), its options read again.
func (k *Keeper) recheckExisting(ctx context.Context, coll string, s Spec) {
	if s.CappedSize == 0 {
		return
	}
	got, found, err := k.collOptions(ctx, coll)
	if err != nil || !found {
		k.log.Debugf("reading the options of existing collection %s: found %v, %v", coll, found, err)
		return
	}
	k.checkExisting(coll, s, got)
}

// checkExisting warns once per collection when capped_size asks coll
// capped and it exists already (with options got) uncapped: created
// before capped_size was set, or by a server that drops the option. The
// plugin never converts a collection, so it grows without bound; writing
// goes on.
func (k *Keeper) checkExisting(coll string, s Spec, got bson.Raw) {
	if s.CappedSize == 0 {
		return
	}
	if capped, _ := got.Lookup("capped").BooleanOK(); capped {
		return
	}
	limit := ""
	if s.CappedMax > 0 {
		limit = fmt.Sprintf(" (convertToCapped sets no document limit: capped_max %d needs a new collection)", s.CappedMax)
	}
	k.warnOnce("existing\x00"+coll+"\x00capped", "capped_size: collection %s exists already and is not capped (created without capped_size, or by a server that ignores it): "+
		"it grows without bound, capped_size %d bytes does not apply to it; writing goes on. To cap it: db.runCommand({convertToCapped: %q, size: %d}) "+
		"(it locks the database while it copies)%s, or set collection to a new name: the plugin creates that one capped", coll, s.CappedSize, coll, s.CappedSize, limit)
}

// exists reports whether err says the collection exists already.
func exists(err error) bool { return errkind.NamespaceExists(err) }

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
