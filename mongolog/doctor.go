package mongolog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// Finding is one thing doctor found about a target (a collection, a
// partition, a dead-letter collection or a server), with what to do. Its
// JSON shape is stable: every field is always present.
type Finding struct {
	Check    string             `json:"check"`    // one of the Check* names
	Target   string             `json:"target"`   // database.collection, or the server (credentials hidden)
	Severity string             `json:"severity"` // SevProblem, SevWarning, SevInfo or SevOK
	Message  string             `json:"message"`
	Advice   string             `json:"advice"`  // what to do; "" when nothing
	Numbers  map[string]float64 `json:"numbers"` // what the message counts, by name; never nil
}

// The severities of a finding. A problem makes doctor exit 1.
const (
	SevProblem = "problem"
	SevWarning = "warning"
	SevInfo    = "info"
	SevOK      = "ok"
)

// The checks doctor makes, as findings name them.
const (
	CheckCollection  = "collection"     // the collection is there (or not yet)
	CheckTTLIndex    = "ttl-index"      // the TTL index on expireAt (parkedAt) and its expireAfterSeconds
	CheckExpireField = "expire-field"   // every document has its expiry field as a BSON date
	CheckTTLMonitor  = "ttl-monitor"    // the server's TTL monitor: on, its interval, its passes
	CheckBacklog     = "backlog"        // documents past their expiry by more than two monitor passes
	CheckPartitions  = "partition-keep" // partitions older than partition_keep still there
	CheckIndexes     = "indexes"        // the indexes the plugin creates are there
	CheckSpace       = "space"          // storage not returned after deletes
	CheckTTLChange   = "ttl-change"     // what --ttl would expire at once
)

func (f Finding) String() string {
	s := fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, f.Target, f.Message)
	if f.Advice != "" {
		s += " -> " + f.Advice
	}
	return s
}

// DoctorOptions tune doctor's checks.
type DoctorOptions struct {
	// Interval is the time between the two reads of the TTL monitor's
	// counters (serverStatus metrics.ttl); default 5s.
	Interval time.Duration
	// TTL, when set, asks what a change of ttl to it would expire at once.
	TTL time.Duration
	// SpaceRatio and SpaceMin: a collection whose storageSize is above
	// SpaceRatio times its dataSize and at least SpaceMin bytes more holds
	// space its deletes did not return (SpaceRatio 0: 2 and 64 MiB).
	SpaceRatio float64
	SpaceMin   int64
	// BacklogWait is the most doctor waits, once per server after every
	// collection is checked, for the TTL monitor's next two passes before it
	// calls documents past their expiry a backlog: documents written just
	// now with an old expiry (an import of old lines) are deleted by them.
	// 0: three of the monitor's intervals; negative: no wait, judged by
	// their expiry alone.
	BacklogWait time.Duration
	Now         func() time.Time // default time.Now
}

// Doctor checks the collections an output writes and the server they are
// on, calling Report with each finding.
type Doctor struct {
	Opt      DoctorOptions
	Report   func(Finding)
	monitors map[string]monitorInfo // the TTL monitor by server, checked once each
	pending  []pendingBacklog       // documents past their expiry, judged by Finish
	// passes, when set, stands for the wait for two passes of the TTL
	// monitor of the server admin is on (tests).
	passes func(ctx context.Context, admin *mongo.Database) error
}

// monitorInfo is what doctor found of a server's TTL monitor.
type monitorInfo struct {
	sleep   time.Duration // its interval
	enabled bool          // it runs, or the server does not say
	counted bool          // serverStatus counts its passes
}

// pendingBacklog is a collection with documents past their expiry by two
// passes at a time, to be counted again after two more passes.
type pendingBacklog struct {
	c     *mongo.Collection
	uri   string
	t     ttlTarget
	after time.Duration
	at    time.Time // when they were counted
	n     int64
}

// defaultMonitorSleep is MongoDB's ttlMonitorSleepSecs, taken when the
// server does not say.
const defaultMonitorSleep = 60 * time.Second

// Output is one mongodb output of a configuration, resolved.
type Output struct {
	Name string // its instance_name or Alias, or where it is in the file
	Cfg  *conf.Config
}

// Outputs resolves every mongodb output of t.File (each with t.Keys over
// its keys), or the one t.Output names, or t.Keys alone without a file.
func (t Target) Outputs(env func(string) string) ([]Output, error) {
	if t.File == "" || t.Output != "" {
		cfg, err := t.Config(env)
		if err != nil {
			return nil, err
		}
		return []Output{{Name: t.Output, Cfg: cfg}}, nil
	}
	secs, err := fbconf.Load(t.File, env)
	if err != nil {
		return nil, err
	}
	outs := fbconf.Outputs(secs, PluginName)
	if len(outs) == 0 {
		return nil, fmt.Errorf("%s: no [OUTPUT] with Name mongodb", t.File)
	}
	var all []Output
	for i := range outs {
		cfg, err := conf.Parse(t.mapOf(&outs[i]), env, nil)
		if err != nil {
			return nil, fmt.Errorf("the output at %s: %w", outs[i].Where(), err)
		}
		name := outs[i].Label()
		if name == "" {
			name = outs[i].Where()
		}
		all = append(all, Output{Name: name, Cfg: cfg})
	}
	return all, nil
}

func (d *Doctor) now() time.Time {
	if d.Opt.Now != nil {
		return d.Opt.Now()
	}
	return time.Now()
}

func (d *Doctor) report(check, target, sev, msg, advice string, nums map[string]float64) {
	if nums == nil {
		nums = map[string]float64{}
	}
	d.Report(Finding{Check: check, Target: target, Severity: sev, Message: msg, Advice: advice, Numbers: nums})
}

// Check checks what r's configuration writes: the server's TTL monitor
// (once per server), each collection or partition and the dead-letter
// collection (indexes, TTL index, expiry fields, backlog, space, and
// with Opt.TTL what that ttl would expire), and partitions past
// partition_keep. A server that refuses a command is named in a finding;
// one that does not answer is an error. Documents past their expiry that
// the TTL monitor may still delete are judged by Finish.
func (d *Doctor) Check(ctx context.Context, r *Reader) error {
	sleep, err := d.monitor(ctx, r)
	if err != nil {
		return err
	}
	names, err := r.DB.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("listing the collections of %s: %w", r.Cfg.Database, err)
	}
	now := d.now()
	cfg := r.Cfg
	p := layout.Partitions{Base: cfg.Collection, Period: cfg.Partition, Keep: cfg.PartitionKeep}
	colls := []string{cfg.Collection}
	if cfg.Partition != layout.None {
		colls = nil
		for _, n := range names {
			if p.Owns(n) {
				colls = append(colls, n)
			}
		}
		slices.Sort(colls)
		d.checkPartitions(r, p, colls, now)
	}
	for _, coll := range append(colls, cfg.DeadLetterCollection) {
		target := cfg.Database + "." + coll
		if !slices.Contains(names, coll) {
			what := "the plugin creates it at its first write there"
			if coll == cfg.DeadLetterCollection {
				what = "no record has been parked"
			}
			d.report(CheckCollection, target, SevInfo, "not there yet: "+what, "", nil)
			continue
		}
		if err := d.checkCollection(ctx, r, coll, coll == cfg.DeadLetterCollection, sleep, now); err != nil {
			return err
		}
	}
	if cfg.Partition != layout.None && len(colls) == 0 {
		d.report(CheckCollection, cfg.Database+"."+cfg.Collection+p.Period.Suffix(), SevInfo,
			"no partition yet: the plugin creates each at its first write there", "", nil)
	}
	return nil
}

// refused reports whether err is the server's answer (it refused or does
// not know the command); an error without an answer is not.
func refused(err error) bool {
	return err != nil && errkind.Of(err).FromServer()
}

// index is one index of a collection, as listIndexes gives it.
type index struct {
	name  string
	keys  bson.D // field: 1, -1 or a kind such as "hashed"
	after *int64 // expireAfterSeconds; nil: not a TTL index
}

func listIndexes(ctx context.Context, c *mongo.Collection) ([]index, error) {
	cur, err := c.Indexes().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the indexes of %s: %w", c.Name(), err)
	}
	defer cur.Close(ctx)
	var out []index
	for cur.Next(ctx) {
		ix := index{name: cur.Current.Lookup("name").StringValue()}
		keys, _ := cur.Current.Lookup("key").DocumentOK()
		elems, _ := keys.Elements()
		for _, e := range elems {
			var v any = e.Value().String()
			if f, ok := e.Value().AsFloat64OK(); ok {
				v = f
			}
			ix.keys = append(ix.keys, bson.E{Key: e.Key(), Value: v})
		}
		if f, ok := cur.Current.Lookup("expireAfterSeconds").AsFloat64OK(); ok {
			v := int64(f)
			ix.after = &v
		}
		out = append(out, ix)
	}
	return out, cur.Err()
}

// sameKeys reports whether an index's keys are want's: the same fields in
// the same order and directions.
func sameKeys(keys bson.D, want bson.D) bool {
	if len(keys) != len(want) {
		return false
	}
	for i, e := range want {
		var w float64
		switch v := e.Value.(type) {
		case int:
			w = float64(v)
		case int32:
			w = float64(v)
		case int64:
			w = float64(v)
		case float64:
			w = v
		default:
			if fmt.Sprint(v) != fmt.Sprint(keys[i].Value) || keys[i].Key != e.Key {
				return false
			}
			continue
		}
		if keys[i].Key != e.Key || keys[i].Value != w {
			return false
		}
	}
	return true
}

// checkCollection checks one collection (or partition, or the
// dead-letter collection when dead).
func (d *Doctor) checkCollection(ctx context.Context, r *Reader, coll string, dead bool, sleep time.Duration, now time.Time) error {
	c := r.DB.Collection(coll)
	target := r.Cfg.Database + "." + coll
	idx, err := listIndexes(ctx, c)
	if err != nil {
		return err
	}
	field, ttl, key := model.ExpireAt, r.Cfg.TTL, "ttl"
	if dead {
		field, ttl, key = model.ParkedAt, r.Cfg.DeadLetterTTL, "dead_letter_ttl"
	}
	t := ttlTarget{coll: coll, target: target, field: field, ttl: ttl, key: key, dead: dead}
	found, after := d.checkTTLIndex(r.Cfg, t, idx)
	if !dead {
		d.checkIndexes(r.Cfg, t, idx)
	}
	if ttl > 0 {
		if err := d.checkExpireField(ctx, c, t); err != nil {
			return err
		}
	}
	if ttl > 0 || after != nil {
		expireAfter := ttl
		if after != nil {
			expireAfter = time.Duration(*after) * time.Second
		}
		if err := d.checkBacklog(ctx, c, r.Cfg.URI, t, expireAfter, after != nil, sleep, now); err != nil {
			return err
		}
	}
	if err := d.checkSpace(ctx, r.DB, t); err != nil {
		return err
	}
	if !dead && d.Opt.TTL > 0 {
		return d.checkTTLChange(ctx, c, r.Cfg, t, found, after, now)
	}
	return nil
}

// ttlTarget is one collection and the expiry field its TTL index is on.
type ttlTarget struct {
	coll, target string
	field        string        // expireAt, or parkedAt in the dead-letter collection
	ttl          time.Duration // what the configuration asks
	key          string        // the key that asks it: ttl or dead_letter_ttl
	dead         bool
}

// applied is when the plugin applies t's TTL to its existing collection:
// ttl at start, without waiting for a write; dead_letter_ttl at the
// collection's next write.
func (t ttlTarget) applied() string {
	if t.dead {
		return "when it next parks a record there"
	}
	return "at start, without waiting for a write"
}

// checkTTLIndex compares the index on t.field with what t.ttl asks, and
// returns whether there is an index on the field alone (as the plugin
// finds it) and its expireAfterSeconds.
func (d *Doctor) checkTTLIndex(cfg *conf.Config, t ttlTarget, idx []index) (found bool, after *int64) {
	want := int64(t.ttl / time.Second)
	create := fmt.Sprintf("db.%s.createIndex({%s: 1}, {expireAfterSeconds: %d})", t.coll, t.field, want)
	var single *index
	var compound []string
	for i, ix := range idx {
		switch {
		case len(ix.keys) == 1 && ix.keys[0].Key == t.field:
			single = &idx[i]
		case slices.ContainsFunc(ix.keys, func(e bson.E) bool { return e.Key == t.field }):
			compound = append(compound, ix.name)
		}
	}
	nums := map[string]float64{"want_seconds": float64(want)}
	if single == nil {
		switch {
		case t.ttl > 0 && len(compound) > 0:
			d.report(CheckTTLIndex, t.target, SevProblem, fmt.Sprintf("%s is only in compound index %s: a TTL index must be on %s alone, so documents never expire by %s %s",
				t.field, strings.Join(compound, ", "), t.field, t.key, keyDuration(t.ttl)), "create the index on "+t.field+" alone (the compound one can stay): "+create, nums)
		case t.ttl > 0:
			advice := "start the plugin with create_indexes on: it creates it " + t.applied() + " (if it does not, its log says why: a server without TTL indexes); or " + create
			if !cfg.CreateIndexes {
				advice = "create_indexes is off, so the plugin does not create it: " + create
			}
			d.report(CheckTTLIndex, t.target, SevProblem, fmt.Sprintf("no TTL index on %s: documents never expire by %s %s", t.field, t.key, keyDuration(t.ttl)), advice, nums)
		}
		return false, nil
	}
	d.judgeTTLIndex(t, *single, want, nums)
	return true, single.after
}

// judgeTTLIndex reports on the index on t.field alone.
func (d *Doctor) judgeTTLIndex(t ttlTarget, ix index, want int64, nums map[string]float64) {
	byName := func(after int64) string {
		return fmt.Sprintf(`db.runCommand({collMod: "%s", index: {name: "%s", expireAfterSeconds: %d}})`, t.coll, ix.name, after)
	}
	if ix.after != nil {
		nums["expire_after_seconds"] = float64(*ix.after)
	}
	dir, _ := ix.keys[0].Value.(float64)
	switch {
	case t.ttl == 0 && ix.after != nil:
		d.report(CheckTTLIndex, t.target, SevWarning, fmt.Sprintf("index %s deletes documents %ds after %s though %s is 0 (the plugin leaves an index it did not ask for as it is)",
			ix.name, *ix.after, t.field, t.key), fmt.Sprintf(`to keep them: db.%s.dropIndex("%s")`, t.coll, ix.name), nums)
	case t.ttl == 0:
	case dir < 0:
		d.report(CheckTTLIndex, t.target, SevProblem, fmt.Sprintf("index %s on %s is descending ({%s: -1}): the plugin finds and changes its TTL index as {%s: 1}, so a change of %s never reaches this one",
			ix.name, t.field, t.field, t.field, t.key), fmt.Sprintf(`db.%s.dropIndex("%s"), then start the plugin: it creates {%s: 1} with expireAfterSeconds %d %s`, t.coll, ix.name, t.field, want, t.applied()), nums)
	case ix.after == nil:
		d.report(CheckTTLIndex, t.target, SevProblem, fmt.Sprintf("index %s {%s: 1} is a plain index, not a TTL index: documents never expire by %s %s", ix.name, t.field, t.key, keyDuration(t.ttl)),
			"start the plugin: it makes it a TTL index in place (collMod, MongoDB 6.0+) "+t.applied()+"; or "+byName(want), nums)
	case *ix.after != want:
		d.report(CheckTTLIndex, t.target, SevProblem, fmt.Sprintf("index %s has expireAfterSeconds %d, %s asks %d (%s): documents leave by the index's value",
			ix.name, *ix.after, t.key, want, keyDuration(t.ttl)),
			"start the plugin with this configuration: it changes the index in place "+t.applied()+" (a lower ttl above ttl_burst_limit first deletes at ttl_delete_rate); if it stays, its log says why; or "+byName(want), nums)
	default:
		d.report(CheckTTLIndex, t.target, SevOK, fmt.Sprintf("TTL index %s {%s: 1}, expireAfterSeconds %d as %s %s", ix.name, t.field, want, t.key, keyDuration(t.ttl)), "", nums)
	}
}

// checkIndexes compares the collection's indexes with those the plugin
// creates there: its lookup index and the user's indexes.
func (d *Doctor) checkIndexes(cfg *conf.Config, t ttlTarget, idx []index) {
	spec := instance.Spec(cfg, t.coll)
	want := spec.Extra
	if spec.Keys != nil {
		want = append([]bson.D{spec.Keys}, want...)
	}
	var missing []string
	for _, keys := range want {
		if !slices.ContainsFunc(idx, func(ix index) bool { return sameKeys(ix.keys, keys) }) {
			missing = append(missing, layout.FormatKeys(keys))
		}
	}
	nums := map[string]float64{"missing": float64(len(missing)), "wanted": float64(len(want))}
	if len(missing) == 0 {
		d.report(CheckIndexes, t.target, SevOK, fmt.Sprintf("the %d indexes the plugin creates are there", len(want)), "", nums)
		return
	}
	advice := "start the plugin: it creates them before its first write to each collection after a start (its log names one the server refused); or db." + t.coll + ".createIndex(...) for each"
	d.report(CheckIndexes, t.target, SevProblem, "lacks the index(es) the plugin creates: "+strings.Join(missing, ", ")+
		" (queries and the writer's lookup scan the collection without them)", advice, nums)
}

// checkExpireField counts the documents without t.field, or with one
// that is not a BSON date: a TTL index never deletes them.
func (d *Doctor) checkExpireField(ctx context.Context, c *mongo.Collection, t ttlTarget) error {
	missing, err := c.CountDocuments(ctx, bson.D{{Key: t.field, Value: bson.D{{Key: "$exists", Value: false}}}})
	if err != nil {
		return fmt.Errorf("counting the documents of %s without %s: %w", t.coll, t.field, err)
	}
	notDate, err := c.CountDocuments(ctx, bson.D{{Key: t.field, Value: bson.D{{Key: "$exists", Value: true}, {Key: "$not", Value: bson.D{{Key: "$type", Value: "date"}}}}}})
	if err != nil {
		return fmt.Errorf("counting the documents of %s whose %s is not a date: %w", t.coll, t.field, err)
	}
	nums := map[string]float64{"missing": float64(missing), "not_date": float64(notDate)}
	if missing > 0 {
		advice := "the plugin gives them one in the background after a start with " + t.key + " set, at ttl_delete_rate; if the count stays, its log says why"
		if t.dead {
			advice = "something other than the plugin wrote them: give them a date or delete them"
		}
		d.report(CheckExpireField, t.target, SevProblem, fmt.Sprintf("%d documents have no %s: they never expire", missing, t.field), advice, nums)
	}
	if notDate > 0 {
		d.report(CheckExpireField, t.target, SevProblem, fmt.Sprintf("%d documents hold %s as something other than a BSON date (a number or a string): a TTL index ignores them, so they never expire", notDate, t.field),
			fmt.Sprintf(`find them with db.%s.find({%s: {$not: {$type: "date"}}}): the plugin writes dates (and validate on refuses anything else), so something else wrote them; set a date or delete them`, t.coll, t.field), nums)
	}
	if missing == 0 && notDate == 0 {
		d.report(CheckExpireField, t.target, SevOK, fmt.Sprintf("every document has %s as a date", t.field), "", nums)
	}
	return nil
}

// checkBacklog counts the documents past their expiry (field + after)
// by more than two passes of the TTL monitor. None is a pass; some are a
// problem when no TTL index or no monitor deletes them, or when doctor is
// not to wait; otherwise they are counted again by Finish, after the
// monitor's next two passes: documents written just now with an old expiry
// are gone by then, a backlog is not.
func (d *Doctor) checkBacklog(ctx context.Context, c *mongo.Collection, uri string, t ttlTarget, after time.Duration, indexed bool, sleep time.Duration, now time.Time) error {
	n, err := c.CountDocuments(ctx, overdue(t, after, sleep, now))
	if err != nil {
		return fmt.Errorf("counting the documents of %s past their expiry: %w", t.coll, err)
	}
	if n == 0 {
		d.report(CheckBacklog, t.target, SevOK, fmt.Sprintf("no document is past its expiry by more than two TTL monitor passes (2 x %s)", shortDuration(sleep)),
			"", backlogNums(n, after, sleep))
		return nil
	}
	if indexed && d.monitors[uri].enabled && d.Opt.BacklogWait >= 0 {
		d.pending = append(d.pending, pendingBacklog{c: c, uri: uri, t: t, after: after, at: now, n: n})
		return nil
	}
	return d.reportBacklog(ctx, c, t, after, indexed, sleep, now, n, "")
}

// overdue is the filter of the documents of t past their expiry at now by
// more than two passes of the TTL monitor.
func overdue(t ttlTarget, after, sleep time.Duration, now time.Time) bson.D {
	return layout.ExpiredBy(t.field, after+2*sleep, now)
}

func backlogNums(n int64, after, sleep time.Duration) map[string]float64 {
	return map[string]float64{"count": float64(n), "expire_after_seconds": after.Seconds(), "monitor_sleep_seconds": sleep.Seconds()}
}

// reportBacklog reports the n documents of t past their expiry at now as a
// backlog, naming the oldest; waited says what they outlived, if anything.
func (d *Doctor) reportBacklog(ctx context.Context, c *mongo.Collection, t ttlTarget, after time.Duration, indexed bool, sleep time.Duration, now time.Time, n int64, waited string) error {
	var oldest bson.Raw
	err := c.FindOne(ctx, overdue(t, after, sleep, now), options.FindOne().SetSort(bson.D{{Key: t.field, Value: 1}}).
		SetProjection(bson.D{{Key: t.field, Value: 1}})).Decode(&oldest)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("reading the oldest expired document of %s: %w", t.coll, err)
	}
	nums := backlogNums(n, after, sleep)
	msg := fmt.Sprintf("%d documents are past their expiry (%s + %s) by more than two TTL monitor passes (2 x %s)", n, t.field, keyDuration(after), shortDuration(sleep))
	if waited != "" {
		msg += " and were still there after " + waited
	}
	if at, ok := oldest.Lookup(t.field).TimeOK(); ok {
		late := now.Sub(at.Add(after)).Truncate(time.Second)
		nums["oldest_overdue_seconds"] = late.Seconds()
		msg += fmt.Sprintf("; the oldest expired %s ago (%s %s)", humanDuration(late), t.field, at.UTC().Format(time.RFC3339))
	}
	advice := "the TTL monitor is not keeping up: write to partitions (partition day with partition_keep: old data goes as whole collections), " +
		"shorten ttlMonitorSleepSecs (db.adminCommand({setParameter: 1, ttlMonitorSleepSecs: 30})), spread expiries with ttl_jitter, or delete the backlog with mongolog prune"
	if !indexed {
		msg += " (no TTL index deletes them: see ttl-index)"
		advice = "give the collection its TTL index (see ttl-index); the monitor then deletes the backlog, in one burst: mongolog prune first spreads it"
	}
	d.report(CheckBacklog, t.target, SevProblem, msg, advice, nums)
	return nil
}

// Finish judges the documents past their expiry that Check left to it:
// per server, it waits for the TTL monitor's next two passes (as its
// serverStatus counts them, or two of its intervals and a half when it
// does not count them), at most Opt.BacklogWait, and counts them again. Those
// gone were written after their expiry (old lines imported): a pass; those
// left are a backlog. Call it once after the last Check.
func (d *Doctor) Finish(ctx context.Context) error {
	pending := d.pending
	d.pending = nil
	var servers []string
	for _, p := range pending {
		if !slices.Contains(servers, p.uri) {
			servers = append(servers, p.uri)
		}
	}
	for _, uri := range servers {
		var mine []pendingBacklog
		var n int64
		for _, p := range pending {
			if p.uri == uri {
				mine = append(mine, p)
				n += p.n
			}
		}
		m := d.monitors[uri]
		admin := mine[0].c.Database().Client().Database("admin")
		most := d.Opt.BacklogWait
		if most == 0 {
			most = 3 * m.sleep
		}
		d.report(CheckBacklog, conf.RedactURI(uri), SevInfo, fmt.Sprintf("%d documents in %d collections are past their expiry by more than two TTL monitor passes: "+
			"waiting for its next two passes (at most %s) to tell a backlog from documents written just now with an old expiry", n, len(mine), humanDuration(most)),
			"", map[string]float64{"count": float64(n), "wait_seconds": most.Seconds()})
		waited, err := d.waitPasses(ctx, admin, m, most)
		if err != nil {
			return err
		}
		for _, p := range mine {
			left, err := p.c.CountDocuments(ctx, overdue(p.t, p.after, m.sleep, p.at))
			if err != nil {
				return fmt.Errorf("counting the documents of %s past their expiry: %w", p.t.coll, err)
			}
			if left == 0 {
				nums := backlogNums(0, p.after, m.sleep)
				nums["deleted"] = float64(p.n)
				d.report(CheckBacklog, p.t.target, SevOK, fmt.Sprintf("the %d documents past their expiry by more than two TTL monitor passes were gone after %s: "+
					"written after their expiry (old lines imported), not a backlog", p.n, waited), "", nums)
				continue
			}
			if err := d.reportBacklog(ctx, p.c, p.t, p.after, true, m.sleep, p.at, left, waited); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitPasses waits, at most most, for two passes of the TTL monitor of the
// server admin is on, and says what it waited for.
func (d *Doctor) waitPasses(ctx context.Context, admin *mongo.Database, m monitorInfo, most time.Duration) (string, error) {
	if d.passes != nil {
		return "the TTL monitor's next two passes", d.passes(ctx, admin)
	}
	start := time.Now()
	if !m.counted {
		wait := min(most, 2*m.sleep+m.sleep/2)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		return humanDuration(wait) + " (the server does not count its TTL monitor's passes)", nil
	}
	p0, _, _, err := ttlPasses(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("serverStatus: %w", err)
	}
	poll := min(max(m.sleep/10, 100*time.Millisecond), time.Second)
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(poll):
		}
		p, _, _, err := ttlPasses(ctx, admin)
		if err != nil {
			return "", fmt.Errorf("serverStatus: %w", err)
		}
		if p >= p0+2 {
			return "the TTL monitor's next two passes", nil
		}
		if time.Since(start) >= most {
			return fmt.Sprintf("%s, in which the TTL monitor passed %.0f times", humanDuration(time.Since(start).Truncate(time.Second)), p-p0), nil
		}
	}
}

// checkPartitions names the partitions older than partition_keep keeps
// that are still there.
func (d *Doctor) checkPartitions(r *Reader, p layout.Partitions, colls []string, now time.Time) {
	if p.Keep <= 0 {
		return
	}
	oldest := p.Collection(p.Oldest(now)) // names sort as their periods
	stale := 0
	for _, n := range colls {
		if n >= oldest {
			continue
		}
		stale++
		d.report(CheckPartitions, r.Cfg.Database+"."+n, SevProblem, fmt.Sprintf("partition %s lies before the %d %ss partition_keep keeps (the oldest kept is %s) and is still there",
			n, p.Keep, p.Period, oldest), fmt.Sprintf("a running plugin with this partition_keep drops it once per %s (its log says \"dropped partition\" or why not); to drop it now: db.%s.drop() (mongolog export it first to keep it)",
			p.Period, n), map[string]float64{"keep": float64(p.Keep)})
	}
	if stale == 0 {
		d.report(CheckPartitions, r.Cfg.Database+"."+r.Cfg.Collection+p.Period.Suffix(), SevOK, fmt.Sprintf("%d partitions, none before the %d partition_keep keeps (oldest kept %s)", len(colls), p.Keep, oldest),
			"", map[string]float64{"partitions": float64(len(colls)), "keep": float64(p.Keep)})
	}
}

// checkSpace compares the collection's storageSize with its dataSize.
func (d *Doctor) checkSpace(ctx context.Context, db *mongo.Database, t ttlTarget) error {
	var st bson.Raw
	err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: t.coll}}).Decode(&st)
	if refused(err) {
		d.report(CheckSpace, t.target, SevInfo, fmt.Sprintf("the server refuses collStats (%v): its space is not checked", err), "", nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("collStats of %s: %w", t.coll, err)
	}
	num := func(k string) float64 { f, _ := st.Lookup(k).AsFloat64OK(); return f }
	size, storage, free := num("size"), num("storageSize"), num("freeStorageSize")
	ratio, minBytes := d.Opt.SpaceRatio, d.Opt.SpaceMin
	if ratio <= 0 {
		ratio, minBytes = 2, 64<<20
	}
	nums := map[string]float64{"data_size": size, "storage_size": storage, "free_storage_size": free}
	if size > 0 {
		nums["ratio"] = math.Round(storage/size*100) / 100
	}
	if storage > ratio*size && storage-size >= float64(minBytes) {
		d.report(CheckSpace, t.target, SevWarning, fmt.Sprintf("storageSize %s is %.1fx the dataSize %s (freeStorageSize %s): space deleted documents left is not returned to the system",
			bytesText(storage), storage/math.Max(size, 1), bytesText(size), bytesText(free)),
			fmt.Sprintf(`db.runCommand({compact: "%s"}) returns it (heavy: off-peak, secondaries first); partitions avoid it: a dropped collection returns its space at once`, t.coll), nums)
		return nil
	}
	d.report(CheckSpace, t.target, SevOK, fmt.Sprintf("storageSize %s for dataSize %s", bytesText(storage), bytesText(size)), "", nums)
	return nil
}

// keyDuration writes d as the duration keys take it: whole days as 7d,
// others as 1h30m.
func keyDuration(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return shortDuration(d)
}

// humanDuration is d in days and hours from two days up, in hours and
// minutes from one hour up, else as shortDuration gives it (to the second).
func humanDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d >= 2*day:
		if h := d % day / time.Hour; h > 0 {
			return fmt.Sprintf("%dd%dh", d/day, h)
		}
		return fmt.Sprintf("%dd", d/day)
	case d >= time.Hour:
		if m := d % time.Hour / time.Minute; m > 0 {
			return fmt.Sprintf("%dh%dm", d/time.Hour, m)
		}
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return shortDuration(d.Truncate(time.Second))
}

func bytesText(b float64) string {
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if b < 1024 {
			return fmt.Sprintf("%.0f %s", b, u)
		}
		b /= 1024
	}
	return fmt.Sprintf("%.1f TiB", b)
}

// checkTTLChange says how many documents a ttl of d.Opt.TTL would expire
// at once, and what the plugin would do about it (layout.PlanTTL and
// ttl_burst_limit decide, as at the plugin's start).
func (d *Doctor) checkTTLChange(ctx context.Context, c *mongo.Collection, cfg *conf.Config, t ttlTarget, found bool, after *int64, now time.Time) error {
	want := int64(d.Opt.TTL / time.Second)
	n, err := c.CountDocuments(ctx, layout.ExpiredBy(t.field, d.Opt.TTL, now))
	if err != nil {
		return fmt.Errorf("counting the documents of %s a ttl of %s expires: %w", t.coll, keyDuration(d.Opt.TTL), err)
	}
	action, lowers := layout.PlanTTL(found, after, want)
	nums := map[string]float64{"expire_at_once": float64(n), "ttl_burst_limit": float64(cfg.TTLBurstLimit), "ttl_delete_rate": float64(cfg.TTLDeleteRate)}
	to := "ttl " + keyDuration(d.Opt.TTL)
	var msg string
	switch {
	case action == layout.TTLKeep:
		msg = to + " is what the TTL index has: nothing changes"
	case !lowers:
		msg = fmt.Sprintf("%s raises the index's expireAfterSeconds %d: nothing expires earlier", to, *after)
	case n == 0:
		msg = to + ": no document expires at once"
	case n > cfg.TTLBurstLimit:
		secs := time.Duration(float64(n) / float64(max(cfg.TTLDeleteRate, 1)) * float64(time.Second)).Round(time.Second)
		nums["seconds_to_delete"] = secs.Seconds()
		msg = fmt.Sprintf("%s expires %d documents at once, above ttl_burst_limit %d: the plugin spreads it, deleting them itself at ttl_delete_rate %d/s (about %s) before it changes the index",
			to, n, cfg.TTLBurstLimit, cfg.TTLDeleteRate, secs)
	default:
		msg = fmt.Sprintf("%s expires %d documents at once, within ttl_burst_limit %d: the TTL monitor deletes them in its next passes", to, n, cfg.TTLBurstLimit)
	}
	if cfg.TTL == 0 {
		missing, err := c.CountDocuments(ctx, bson.D{{Key: t.field, Value: bson.D{{Key: "$exists", Value: false}}}})
		if err != nil {
			return fmt.Errorf("counting the documents of %s without %s: %w", t.coll, t.field, err)
		}
		nums["without_field"] = float64(missing)
		msg += fmt.Sprintf("; the %d documents without %s get one in the background, at ttl_delete_rate", missing, t.field)
	}
	d.report(CheckTTLChange, t.target, SevInfo, msg, "", nums)
	return nil
}

// monitor checks the TTL monitor of r's server, once per server: whether
// it runs and how often (getParameter ttlMonitorEnabled and
// ttlMonitorSleepSecs), and its passes and deletions over Opt.Interval
// (serverStatus metrics.ttl, read twice). It returns the monitor's
// interval (MongoDB's default 60s when the server does not say).
func (d *Doctor) monitor(ctx context.Context, r *Reader) (time.Duration, error) {
	if m, ok := d.monitors[r.Cfg.URI]; ok {
		return m.sleep, nil
	}
	target := r.Cfg.Redacted()
	admin := r.DB.Client().Database("admin")
	sleep, enabled := defaultMonitorSleep, true
	var p bson.Raw
	err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}}).Decode(&p)
	switch {
	case refused(err):
		d.report(CheckTTLMonitor, target, SevInfo, fmt.Sprintf("the server refuses getParameter ttlMonitorEnabled, ttlMonitorSleepSecs (%v): whether its TTL monitor runs is unknown; the backlog allows two passes of MongoDB's default %s",
			err, shortDuration(sleep)), "", nil)
	case err != nil:
		return 0, fmt.Errorf("getParameter ttlMonitorEnabled: %w", err)
	default:
		if s, ok := p.Lookup("ttlMonitorSleepSecs").AsInt64OK(); ok && s > 0 {
			sleep = time.Duration(s) * time.Second
		}
		on, known := p.Lookup("ttlMonitorEnabled").BooleanOK()
		enabled = on || !known
		nums := map[string]float64{"sleep_seconds": sleep.Seconds()}
		if enabled {
			d.report(CheckTTLMonitor, target, SevOK, fmt.Sprintf("the TTL monitor runs every %s (ttlMonitorSleepSecs)", shortDuration(sleep)), "", nums)
		} else {
			d.report(CheckTTLMonitor, target, SevProblem, "the TTL monitor is off (ttlMonitorEnabled false): no TTL index deletes anything",
				"db.adminCommand({setParameter: 1, ttlMonitorEnabled: true})", nums)
		}
	}
	counted, err := d.monitorPasses(ctx, admin, target, sleep, enabled)
	if err != nil {
		return 0, err
	}
	if d.monitors == nil {
		d.monitors = map[string]monitorInfo{}
	}
	d.monitors[r.Cfg.URI] = monitorInfo{sleep: sleep, enabled: enabled, counted: counted}
	return sleep, nil
}

// ttlPasses reads the TTL monitor's counters (serverStatus metrics.ttl):
// its passes and the documents it deleted; ok is false when the server
// does not count them.
func ttlPasses(ctx context.Context, admin *mongo.Database) (passes, deleted float64, ok bool, err error) {
	var st bson.Raw
	if err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		return 0, 0, false, err
	}
	passes, ok = st.Lookup("metrics", "ttl", "passes").AsFloat64OK()
	deleted, _ = st.Lookup("metrics", "ttl", "deletedDocuments").AsFloat64OK()
	return passes, deleted, ok, nil
}

// monitorPasses reads serverStatus metrics.ttl twice, Opt.Interval apart,
// and reports the passes and deletions in between; counted is whether the
// server counts them.
func (d *Doctor) monitorPasses(ctx context.Context, admin *mongo.Database, target string, sleep time.Duration, enabled bool) (counted bool, err error) {
	read := func() (float64, float64, bool, error) { return ttlPasses(ctx, admin) }
	p0, d0, ok, err := read()
	switch {
	case refused(err):
		d.report(CheckTTLMonitor, target, SevInfo, fmt.Sprintf("the server refuses serverStatus (%v): the TTL monitor's passes are not watched", err), "", nil)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("serverStatus: %w", err)
	case !ok:
		d.report(CheckTTLMonitor, target, SevInfo, "the server's serverStatus has no metrics.ttl: the TTL monitor's passes are not watched", "", nil)
		return false, nil
	}
	interval := d.Opt.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-time.After(interval):
	}
	p1, d1, _, err := read()
	if err != nil {
		return true, fmt.Errorf("serverStatus: %w", err)
	}
	nums := map[string]float64{"passes": p1 - p0, "deleted_documents": d1 - d0, "interval_seconds": interval.Seconds(),
		"deleted_per_second": math.Round((d1-d0)/interval.Seconds()*10) / 10, "passes_total": p1, "deleted_documents_total": d1}
	msg := fmt.Sprintf("%.0f TTL monitor passes deleted %.0f documents in %s", p1-p0, d1-d0, interval)
	if enabled && p1 == p0 && interval >= 2*sleep {
		d.report(CheckTTLMonitor, target, SevProblem, msg+fmt.Sprintf(", though it should pass every %s", shortDuration(sleep)),
			"the monitor runs on a primary only, and a pass lasts until it has deleted what expired: look at the server's log for TTL lines", nums)
		return true, nil
	}
	d.report(CheckTTLMonitor, target, SevOK, msg, "", nums)
	return true, nil
}
