// Package instance is one configured [OUTPUT] of the plugin: its
// configuration, MongoDB client, sink and logger. The cgo layer holds one
// Instance per Fluent Bit output and calls Flush and Exit on it.
package instance

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/metrics"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/version"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// reportEvery is how often a summary line is logged at info.
const reportEvery = time.Minute

// dropRetry is how long a failed partition drop waits before it is tried
// again.
const dropRetry = 5 * time.Minute

// exitGrace bounds how long Exit waits for flushes in flight beyond their
// own deadline.
const exitGrace = 5 * time.Second

// Instance is one configured output.
type Instance struct {
	Name   string
	cfg    *conf.Config
	log    *Logger
	client *mongo.Client
	sink   *sink.Sink

	stop     context.CancelFunc // ends background work (the start-up ping)
	ctx      context.Context
	bg       sync.WaitGroup
	inflight sync.WaitGroup
	gate     sync.RWMutex // orders inflight.Add before Exit's inflight.Wait
	closing  bool         // under gate
	exitOnce sync.Once
	// retention orders partition drops after the flushes in flight, so a
	// flush never writes into a partition being dropped; kept is the start
	// of the kept range partition_keep last applied, failed the time of the
	// last attempt that failed (both under retention).
	retention    sync.RWMutex
	kept, failed time.Time
	places       layout.Places // where the instance writes, for retention and existing targets
	// keepers prepare the collections of each database written to (one
	// unless database is a template), under keepersMu.
	keepersMu sync.Mutex
	keepers   map[string]*layout.Keeper

	mu         sync.Mutex
	lastReport time.Time
	reported   sink.Totals

	outage   *outage // says when MongoDB cannot be reached, and when it is back
	stats    *metrics.Output
	endpoint *metrics.Endpoint // nil without metrics_listen
	slot     *os.File          // holds the agent's slot (see claimAgent); nil when none was taken

	// known: the server's buildInfo was read, through info (under
	// serverMu); a store that cannot read it leaves info nil.
	serverMu sync.Mutex
	known    bool
	info     writer.Informer
}

// New validates the configuration and prepares the instance. It does not
// wait for MongoDB: an unreachable server is logged, and flushes are
// retried until it is back.
func New(g conf.Getter, defaultName string, logOut io.Writer) (*Instance, error) {
	return NewWith(g, defaultName, logOut, Seams{})
}

// Seams are what tests reach into an instance with.
type Seams struct {
	// Monitor, if set, sees every command the instance's client sends.
	Monitor *event.CommandMonitor
	// Wrap, if set, wraps the MongoDB store the sink writes through
	// (fault injection).
	Wrap func(writer.Store) writer.Store
	// Getenv, if set, is the environment uri_env reads (nil: the process's).
	Getenv func(string) string
}

// NewWith is New with seams for tests.
func NewWith(g conf.Getter, defaultName string, logOut io.Writer, seams Seams) (*Instance, error) {
	cfg, err := conf.Parse(g, seams.Getenv, nil)
	if err != nil {
		return nil, err
	}
	name := cfg.InstanceName
	if name == "" {
		name = defaultName
	}
	log := NewLogger(logOut, name, cfg.PluginLogLevel)
	if w := conf.InsecureTLS(cfg.URI); w != "" {
		log.Warnf("%s", w)
	}
	opt := sinkOptions(cfg)
	agent, slot, cerr := claimAgent(cfg)
	if cerr != nil {
		log.Warnf("%v: this process's chunks get an identity of their own, so a chunk Fluent Bit resends after a restart is stored again", cerr)
	}
	opt.Agent = agent
	var endpoint *metrics.Endpoint
	if cfg.MetricsListen != "" {
		if endpoint, err = metrics.Listen(cfg.MetricsListen); err != nil {
			if slot != nil {
				slot.Close()
			}
			return nil, &conf.Error{Key: "metrics_listen", Value: cfg.MetricsListen, Reason: "cannot serve metrics there: " + err.Error()}
		}
	}
	closeEndpoint := func() {
		if endpoint != nil {
			endpoint.Close()
		}
		if slot != nil {
			slot.Close()
		}
	}
	stats := metrics.For(name)
	opt.OnWrite = stats.OnWrite
	copts := options.Client().ApplyURI(cfg.URI).
		SetAppName("fluent-bit-out_mongodb").
		SetConnectTimeout(cfg.ConnectTimeout).
		SetServerSelectionTimeout(cfg.ConnectTimeout)
	if seams.Monitor != nil {
		copts.SetMonitor(seams.Monitor)
	}
	if wc := writeConcern(cfg); wc != nil {
		copts.SetWriteConcern(wc)
	}
	client, err := mongo.Connect(copts)
	if err != nil {
		closeEndpoint()
		return nil, fmt.Errorf("uri: invalid value %q: %v", cfg.Redacted(), err)
	}
	db := client.Database(cfg.Database)
	var store writer.Store = writer.MongoStore{DB: db, Qualified: qualified(cfg), Majority: cfg.WriteConcern.Majority}
	if seams.Wrap != nil {
		store = seams.Wrap(store)
	}
	ctx, stop := context.WithCancel(context.Background())
	in := &Instance{Name: name, cfg: cfg, log: log, client: client, ctx: ctx, stop: stop, lastReport: time.Now(),
		stats: stats, endpoint: endpoint, slot: slot, keepers: map[string]*layout.Keeper{}, places: places(cfg)}
	in.info, _ = store.(writer.Informer)
	// The outage is said once by the instance, from what the sink's
	// commands and flushes meet.
	in.outage = newOutage(log, cfg.URI)
	store = watched{Store: store, o: in.outage}
	opt.OutagesReported = true
	opt.Setup = in.setup
	if opt.Targets != nil {
		opt.Targets.Existing = in.existingTargets
	}
	if in.sink, err = sink.New(opt, store, writer.DefaultRetry, log); err != nil {
		stop()
		closeEndpoint()
		_ = client.Disconnect(context.Background())
		return nil, err
	}
	if endpoint != nil {
		log.Infof("serving metrics on http://%s/metrics (output=%q)", endpoint.Addr(), name)
	}
	log.Infof("writing to %s, database %s, collection %s, mode %s; out_mongodb %s", cfg.Redacted(), cfg.Database, cfg.Collection, cfg.Mode, version.String())
	changed := cfg.Changed()
	if changed == "" {
		changed = "none"
	}
	log.Infof("settings other than the defaults: %s", changed)
	in.bg.Add(2)
	go in.ping()
	go in.retainAtStart()
	return in, nil
}

// ping checks the server once at start, so a wrong address shows in the
// log at once rather than at the first flush.
func (in *Instance) ping() {
	defer in.bg.Done()
	ctx, cancel := context.WithTimeout(in.ctx, in.cfg.ConnectTimeout)
	defer cancel()
	start := time.Now()
	if err := in.client.Ping(ctx, nil); err != nil {
		if in.ctx.Err() == nil {
			in.log.Warnf("MongoDB is not reachable yet at %s: %s; chunks will be retried until it is", in.outage.hosts, conf.RedactText(errkind.Cause(err)))
			in.outage.failed(err, start, false)
		}
		return
	}
	in.outage.ok(start)
	in.log.Infof("connected to MongoDB")
}

func writeConcern(cfg *conf.Config) *writeconcern.WriteConcern {
	if cfg.WriteConcern.IsDefault() && cfg.WriteJournal == nil {
		return nil
	}
	wc := &writeconcern.WriteConcern{Journal: cfg.WriteJournal}
	switch {
	case cfg.WriteConcern.Majority:
		wc.W = "majority"
	case cfg.WriteConcern.W > 0:
		wc.W = cfg.WriteConcern.W
	}
	return wc
}

// sinkOptions maps the configuration onto the core's options.
func sinkOptions(cfg *conf.Config) sink.Options {
	return sink.Options{
		Mode:         cfg.Mode,
		Targets:      targets(cfg),
		Collection:   cfg.Collection,
		DeadLetter:   cfg.DeadLetterCollection,
		Partitions:   layout.Partitions{Period: cfg.Partition, Keep: cfg.PartitionKeep},
		TagKey:       cfg.TagKey,
		IDKey:        cfg.IDKey,
		IDReplace:    cfg.IDAction == conf.IDReplace,
		Idempotent:   cfg.Idempotent,
		MaxInflight:  cfg.MaxInflight,
		WriteBatch:   cfg.WriteBatch,
		FlushTimeout: cfg.FlushTimeout,
		Expiry:       expiry(cfg),
		MaxRecords:   cfg.BucketMaxRecords,
		MaxBytes:     int(cfg.BucketMaxBytes),
		Decoder: parser.Options{
			TimeKey:       cfg.TimeKey,
			ReplaceDot:    cfg.KeyReplaceDot,
			ReplaceDollar: cfg.KeyReplaceDollar,
			KeepMetadata:  cfg.KeepMetadata,
			Line:          cfg.Line,
			ParseKey:      cfg.ParseKey,
			TimeFromLog:   cfg.TimeFromLog,
			Types:         cfg.TypeKinds,
			Include:       cfg.IncludeFields,
			Exclude:       cfg.ExcludeFields,
		},
		Grouper: bucketer.Config{
			KeyPaths:   cfg.BucketKey,
			Window:     cfg.BucketWindow,
			Stats:      cfg.Stats,
			CountBy:    cfg.CountBy,
			KeepValues: cfg.KeepValues,
		},
	}
}

// Flush writes one chunk. A panic below it is recovered and turned into a
// retry, so a bug costs a retry of the chunk, not the agent.
func (in *Instance) Flush(tag string, data []byte) (status sink.Status) {
	in.gate.RLock()
	if in.closing {
		in.gate.RUnlock()
		in.log.Warnf("flush of tag %q after exit; chunk retried", tag)
		return sink.Retry
	}
	in.inflight.Add(1)
	in.gate.RUnlock()
	defer in.inflight.Done()
	defer func() {
		if r := recover(); r != nil {
			in.log.Errorf("panic while flushing a chunk of tag %q (it will be retried): %v\n%s", tag, r, debug.Stack())
			status = sink.Retry
		}
	}()
	start := time.Now()
	res := in.flush(tag, data)
	if res.Status == sink.Retry {
		in.outage.failed(res.Err, start, true)
		in.outage.retry()
	}
	in.stats.Flushed(res, time.Since(start))
	in.dropOldPartitions()
	in.report()
	return res.Status
}

// Totals are the instance's counters since start.
func (in *Instance) Totals() sink.Totals { return in.sink.Totals() }

// flush runs the sink's flush under the retention lock's read side.
func (in *Instance) flush(tag string, data []byte) sink.Result {
	in.retention.RLock()
	defer in.retention.RUnlock()
	return in.sink.Flush(in.ctx, tag, data)
}

// expiry is when the instance's documents leave. A rule names a bucket_key
// path, stored as a field of the bucket's key, or a flat document's field.
func expiry(cfg *conf.Config) layout.Expiry {
	e, docs := layout.Expiry{TTL: cfg.TTL, Jitter: cfg.TTLJitter}, cfg.Model()
	for _, r := range cfg.TTLRules {
		e.Rules = append(e.Rules, layout.Rule{Field: docs.RuleField(r.Field), Value: r.Value, TTL: r.TTL})
	}
	return e
}

// qualified reports whether the sink's collection names hold their
// database: database is a template.
func qualified(cfg *conf.Config) bool {
	return cfg.Targets.Templated() && !cfg.Targets.Database.Static()
}

// targets are the sink's templates, nil when every record goes to the same
// collection.
func targets(cfg *conf.Config) *sink.Targets {
	t := cfg.Targets
	if !t.Templated() {
		return nil
	}
	return &sink.Targets{Target: naming.Pair{Database: t.Database, Collection: t.Collection}, DeadLetter: t.DeadLetter,
		Qualified: qualified(cfg), Limit: cfg.TargetLimit, Overflow: cfg.TargetOverflow}
}

// spec is how the instance creates and keeps a collection, or a
// dead-letter collection.
func spec(cfg *conf.Config, deadLetter bool) layout.Spec {
	s := layout.Spec{Compression: cfg.Compression}
	if deadLetter {
		if cfg.CreateIndexes && cfg.DeadLetterTTL > 0 {
			s.TTLField, s.TTL = model.ParkedAt, cfg.DeadLetterTTL
		}
		return s
	}
	docs := cfg.Model()
	s.CappedSize, s.CappedMax, s.ShardKey, s.Extra = cfg.CappedSize, cfg.CappedMax, docs.ShardKey(), docs.UserIndexes()
	if cfg.Validate {
		s.Validator = docs.Validator()
	}
	e := expiry(cfg)
	if docs.Flat {
		s.ExpireAt = e.StoredFlat(cfg.TimeKey)
	} else {
		s.ExpireAt, s.Projection = e.StoredBucket, layout.BucketProjection
	}
	if !cfg.CreateIndexes {
		return s
	}
	if cfg.TTL > 0 {
		s.TTLField, s.TTL = model.ExpireAt, cfg.TTL
	}
	s.Keys = docs.LookupIndex()
	return s
}

// setup prepares a collection before its first write, knowing first what
// the server is.
func (in *Instance) setup(ctx context.Context, coll string, deadLetter bool) error {
	if err := in.learnServer(ctx); err != nil {
		return err
	}
	db := in.cfg.Database
	if qualified(in.cfg) {
		db, coll = writer.SplitNamespace(coll)
	}
	return in.keeper(db).Prepare(ctx, coll, spec(in.cfg, deadLetter))
}

// keeper is the keeper of database db's collections.
func (in *Instance) keeper(db string) *layout.Keeper {
	in.keepersMu.Lock()
	defer in.keepersMu.Unlock()
	k := in.keepers[db]
	if k == nil {
		k = layout.NewKeeper(in.ctx, in.client.Database(db), in.log,
			layout.Limits{BurstLimit: in.cfg.TTLBurstLimit, Rate: in.cfg.TTLDeleteRate, Batch: in.cfg.WriteBatch})
		in.keepers[db] = k
	}
	return k
}

// learnServer reads the server's buildInfo once, before the first write,
// and caps write_batch where the server is known to need it. A server that
// does not answer or answers "not now" is asked again at the next setup;
// one that refuses is written to as MongoDB.
func (in *Instance) learnServer(ctx context.Context) error {
	in.serverMu.Lock()
	defer in.serverMu.Unlock()
	if in.known {
		return nil
	}
	if in.info == nil {
		in.known = true
		return nil
	}
	info, err := in.info.BuildInfo(ctx)
	switch {
	case errkind.Of(err).Refusal():
		in.known = true
		in.log.Debugf("buildInfo refused (%v): writing as to MongoDB", err)
		return nil
	case err != nil:
		return fmt.Errorf("reading the server's buildInfo: %w", err)
	}
	in.known = true
	srv := writer.ServerOf(info)
	in.log.Infof("the server is %s", srv.Name)
	if srv.MaxWriteBatch > 0 && in.cfg.WriteBatch > srv.MaxWriteBatch {
		in.sink.CapWriteBatch(srv.MaxWriteBatch)
		in.log.Warnf("write_batch %d lowered to %d for this server: %s (set write_batch %d to choose it yourself)",
			in.cfg.WriteBatch, srv.MaxWriteBatch, srv.Why, srv.MaxWriteBatch)
	}
	return nil
}

// dropOldPartitions applies partition_keep: it drops the partitions whose
// period lies wholly before the kept range, counted back from now (never
// from the newest partition: a record from the future moves nothing). It
// runs once per period and process, after the flushes in flight.
func (in *Instance) dropOldPartitions() {
	p, now := in.places.Partitions, time.Now()
	if p.Keep == 0 {
		return
	}
	oldest := p.Oldest(now)
	due := func() bool { return oldest.After(in.kept) && now.Sub(in.failed) >= dropRetry }
	in.retention.RLock()
	ok := due()
	in.retention.RUnlock()
	if !ok {
		return
	}
	in.retention.Lock()
	defer in.retention.Unlock()
	if !due() {
		return
	}
	ctx, cancel := context.WithTimeout(in.ctx, in.cfg.FlushTimeout)
	defer cancel()
	if err := in.dropOld(ctx, now); err != nil {
		in.failed = now
		in.log.Warnf("applying partition_keep: %v (tried again in %v)", err, dropRetry)
	}
}

// dropOld drops the partitions before the range kept at now, and notes
// the range as applied; the caller holds retention's write side, so no
// flush is writing meanwhile.
func (in *Instance) dropOld(ctx context.Context, now time.Time) error {
	p := in.places.Partitions
	oldest := p.Oldest(now)
	err := in.places.DropOld(ctx, in.client, now, func(db, coll string) {
		if qualified(in.cfg) {
			coll = db + "." + coll
		}
		in.log.Infof("dropped partition %s (partition_keep %d keeps %s and later)", coll, p.Keep, p.Collection(oldest))
	})
	if err == nil {
		in.kept = oldest
	}
	return err
}

// startRetry caps the pause between the attempts to apply retention at
// start while the server does not answer.
const startRetry = 30 * time.Second

// retainAtStart applies the retention the configuration asks for to the
// targets that exist already, without waiting for a write to each:
// partition_keep's drops, then ttl on each existing collection (and on
// each partition). It runs in the background: a server that does not answer
// (down, an election) is asked again, the pause growing to startRetry,
// until one pass succeeds; Exit stops it.
func (in *Instance) retainAtStart() {
	defer in.bg.Done()
	pause := time.Second
	for attempt := 1; ; attempt++ {
		err := in.retainOnce()
		switch {
		case err == nil:
			return
		case in.ctx.Err() != nil:
			return
		case !errkind.Of(err).Passing():
			in.log.Warnf("applying retention at start: %s (applied at the first write to each collection instead)", conf.RedactText(err.Error()))
			return
		}
		in.log.Debugf("applying retention (ttl, partition_keep) at start, attempt %d, tried again in %v: %s", attempt, pause, conf.RedactText(err.Error()))
		select {
		case <-in.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, startRetry)
	}
}

// retainOnce is one attempt of retainAtStart.
func (in *Instance) retainOnce() error {
	ctx, cancel := context.WithTimeout(in.ctx, in.cfg.FlushTimeout)
	defer cancel()
	if in.places.Partitions.Keep > 0 {
		// The drops hold up flushes: not while the server does not answer.
		if err := in.client.Ping(ctx, nil); err != nil {
			return err
		}
		in.retention.Lock()
		now := time.Now()
		var err error
		if in.places.Partitions.Oldest(now).After(in.kept) {
			err = in.dropOld(ctx, now)
		}
		in.retention.Unlock()
		if err != nil {
			return fmt.Errorf("applying partition_keep: %w", err)
		}
	}
	s := spec(in.cfg, false)
	if s.TTLField == "" {
		return nil
	}
	// A dead-letter collection keeps dead_letter_ttl, applied at its
	// first write: never the targets' ttl.
	deadLetter := func(name string) bool { return name == in.cfg.DeadLetterCollection }
	if t := in.cfg.Targets.DeadLetter; t != nil && !t.Static() {
		deadLetter = t.Matches
	}
	colls, err := in.places.Collections(ctx, in.client, func(name string) bool { return in.places.Owns(name) && !deadLetter(name) })
	if err != nil {
		return err
	}
	for _, c := range colls {
		if err := in.keeper(c[0]).ApplyTTL(ctx, c[1], s); err != nil {
			return err
		}
	}
	return nil
}

// places are where an instance of cfg writes: its database or those its
// template can give, and its collection's (or template's) partitions.
func places(cfg *conf.Config) layout.Places {
	pl := layout.Places{Database: cfg.Database,
		Partitions: layout.Partitions{Base: cfg.Collection, Period: cfg.Partition, Keep: cfg.PartitionKeep}}
	if t := cfg.Targets.Database; t != nil && !t.Static() {
		pl.DatabaseMatch = t.Matches
	}
	if t := cfg.Targets.Collection; t != nil {
		pl.CollectionMatch = t.Matches
		if !t.Static() {
			pl.Partitions.Bases = t.Matches
		}
	}
	return pl
}

// existingTargets lists the targets that exist already (see
// layout.Places.Existing); dead-letter collections a template can give
// count too.
func (in *Instance) existingTargets(ctx context.Context) ([][2]string, error) {
	return in.places.Existing(ctx, in.client)
}

// report logs a summary line at most once a minute.
func (in *Instance) report() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if time.Since(in.lastReport) < reportEvery {
		return
	}
	t := in.sink.Totals()
	p := in.reported
	in.log.Infof("last %s: %s, %s, %d stored, %d already stored, %d parked, %s, %s",
		time.Since(in.lastReport).Round(time.Second), count(t.Chunks-p.Chunks, "chunk"), count(t.Records-p.Records, "record"),
		t.Stored-p.Stored, t.Found-p.Found, t.Parked-p.Parked, count(t.Retries-p.Retries, "retry"), count(t.ParseFailures-p.ParseFailures, "parse failure"))
	in.reported, in.lastReport = t, time.Now()
}

// Exit refuses new flushes, waits for those in flight (up to their deadline
// and a grace period), stops background work and disconnects. Calling it
// again does nothing.
func (in *Instance) Exit() { in.exitOnce.Do(in.exit) }

func (in *Instance) exit() {
	in.gate.Lock()
	in.closing = true
	in.gate.Unlock()
	done := make(chan struct{})
	go func() { in.inflight.Wait(); close(done) }()
	select {
	case <-done:
		in.stop()
	case <-time.After(in.cfg.FlushTimeout + exitGrace):
		in.log.Warnf("flushes still running at exit are cancelled; Fluent Bit keeps their chunks")
		in.stop()
		<-done
	}
	in.bg.Wait()
	in.keepersMu.Lock()
	for _, k := range in.keepers {
		k.Wait()
	}
	in.keepersMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), exitGrace)
	defer cancel()
	if err := in.client.Disconnect(ctx); err != nil {
		in.log.Warnf("disconnecting: %v", err)
	}
	t := in.sink.Totals()
	in.log.Infof("stopped: %s, %s, %d stored, %d already stored, %d parked, %s", count(t.Chunks, "chunk"), count(t.Records, "record"),
		t.Stored, t.Found, t.Parked, count(t.Retries, "retry"))
	if in.endpoint != nil {
		in.endpoint.Close()
	}
	if in.slot != nil {
		in.slot.Close() // the slot is free for this agent's next start
	}
}

// count is n with noun, in the plural unless n is 1.
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
