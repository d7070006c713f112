package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// waitFor polls cond until it holds or a deadline ten times what it needs
// passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// recent is a chunk of n records of now, spread over hosts (and modules).
func recent(t *testing.T, n int, hosts ...string) []byte {
	now := time.Now().UTC()
	var recs [][]byte
	for i := 0; i < n; i++ {
		h := hosts[i%len(hosts)]
		recs = append(recs, record(t, now.Add(time.Duration(i)*time.Millisecond), kv{"host", h}, kv{"level", []string{"info", "debug"}[i%2]},
			kv{"status", 200 + 300*(i%3/2)}, kv{"i", i}))
	}
	return join(recs)
}

func mustDone(t *testing.T, st sink.Status, log fmt.Stringer) {
	t.Helper()
	if st != sink.Done {
		t.Fatalf("flush: %v\n%s", st, log)
	}
}

// ttlCommands returns the expireAfterSeconds of the TTL indexes on field
// that createIndexes commands asked for, and those collMod sent naming the
// index by its key pattern.
func ttlCommands(t *testing.T, sent []sentCommand, field string) (created, modified []int64) {
	t.Helper()
	for _, c := range sent {
		switch c.name {
		case "createIndexes":
			for _, v := range mustValues(t, c.body.Lookup("indexes")) {
				ix := v.Document()
				if _, err := ix.Lookup("key").Document().LookupErr(field); err != nil {
					continue
				}
				if s, ok := ix.Lookup("expireAfterSeconds").AsInt64OK(); ok {
					created = append(created, s)
				}
			}
		case "collMod":
			ix := c.body.Lookup("index").Document()
			if pattern, ok := ix.Lookup("keyPattern").DocumentOK(); ok && pattern.Lookup(field).Type != bson.Type(0) {
				modified = append(modified, ix.Lookup("expireAfterSeconds").AsInt64())
			}
		}
	}
	return created, modified
}

// ttl 7d, then a restart with ttl 3d, changes the existing index with
// collMod to 259200 seconds: never dropped and rebuilt. A server that
// refuses the index's key pattern in collMod is asked by the index's name.
// The test server has neither TTL indexes nor collMod: the plugin warns
// once per collection and keeps writing.
func TestTTLChangedInPlace(t *testing.T) {
	e := newDBEnv(t)
	in, cmds, log := monitored(t, e, "ttl", "7d")
	mustDone(t, in.Flush("app.log", recent(t, 50, "a")), log)
	mustDone(t, in.Flush("app.log", recent(t, 50, "a")), log)
	in.Exit()
	if created, _ := ttlCommands(t, cmds.since(0), "expireAt"); len(created) != 1 || created[0] != 604800 {
		t.Fatalf("TTL index asked for with %v, want once with 604800", created)
	}
	if !e.srv.Real {
		// The test server refused the TTL index: a plain index stands in
		// for one made by a server that had them.
		if got := strings.Count(log.String(), "do not expire by this ttl"); got != 1 {
			t.Errorf("%d warnings about the refused TTL index, want 1:\n%s", got, log)
		}
		if _, err := e.db.Collection("logs").Indexes().CreateOne(context.Background(),
			mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	in, cmds, log = monitored(t, e, "ttl", "3d")
	mustDone(t, in.Flush("app.log", recent(t, 50, "a")), log)
	// A lower TTL is applied in the background, which exit stops: wait
	// for its outcome (changed, refused or failed) first.
	waitFor(t, "the outcome of the TTL change", func() bool {
		return strings.Contains(log.String(), "TTL of index {expireAt: 1} on logs")
	})
	in.Exit()
	created, modified := ttlCommands(t, cmds.since(0), "expireAt")
	if len(created) != 0 || len(modified) != 1 || modified[0] != 259200 {
		t.Fatalf("created %v, collMod %v: want one collMod with 259200\n%s", created, modified, log)
	}
	// A server that refuses the key pattern form (the test server refuses
	// collMod in every form) is asked once more, by the index's name.
	byName := 0
	for _, c := range named(cmds.since(0), "collMod") {
		ix := c.body.Lookup("index").Document()
		if name, ok := ix.Lookup("name").StringValueOK(); ok {
			byName++
			if name != "expireAt_1" || ix.Lookup("expireAfterSeconds").AsInt64() != 259200 {
				t.Errorf("collMod by name %v, want expireAt_1 with 259200", ix)
			}
		}
	}
	if byName > 1 || !e.srv.Real && byName != 1 {
		t.Errorf("%d collMods by name, want one after a refusal by key pattern (at most one on any server)\n%s", byName, log)
	}
	if drops := named(cmds.since(0), "dropIndexes"); len(drops) > 0 {
		t.Errorf("the index was dropped: %v", drops[0].body)
	}
	if e.srv.Real {
		if got := ttlOf(t, e, "expireAt_1"); got == nil || *got != 259200 {
			t.Errorf("index expireAt_1 expires after %s, want 259200\n%s", seconds(got), log)
		}
	} else if !strings.Contains(log.String(), "collMod") {
		t.Errorf("the refused collMod is not logged:\n%s", log)
	}
	if n := countEntries(t, e, "logs"); n != 150 {
		t.Errorf("%d records stored, want 150", n)
	}
}

// countEntries counts the records stored in the buckets of coll.
func countEntries(t *testing.T, e *env, coll string) int {
	t.Helper()
	n := 0
	for _, d := range e.all(coll) {
		n += int(d.Lookup("count").AsInt64())
	}
	return n
}

// A lower ttl that would expire more documents at once than
// ttl_burst_limit deletes them first, oldest first in paced batches, and
// changes the index after.
func TestTTLLoweredInBatches(t *testing.T) {
	e := newDBEnv(t)
	ctx := context.Background()
	now := time.Now().UTC()
	var docs []any
	for i := 0; i < 40; i++ {
		at := now.Add(-5 * 24 * time.Hour).Add(time.Duration(i) * time.Minute) // expired under 3d, not under the 7d the TTL monitor applies meanwhile
		if i >= 30 {
			at = now // not expired under 3d
		}
		docs = append(docs, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "tag", Value: "old"}, {Key: "ts", Value: at}, {Key: "expireAt", Value: at}})
	}
	if _, err := e.db.Collection("logs").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	model := mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}}}
	if e.srv.Real {
		model.Options = options.Index().SetExpireAfterSeconds(7 * 24 * 3600)
	}
	if _, err := e.db.Collection("logs").Indexes().CreateOne(ctx, model); err != nil {
		t.Fatal(err)
	}
	in, cmds, log := monitored(t, e, "mode", "flat", "ttl", "3d", "ttl_burst_limit", "10", "ttl_delete_rate", "10")
	mustDone(t, in.Flush("app.log", recent(t, 20, "a")), log)
	waitFor(t, "the collMod after the deletes", func() bool {
		_, modified := ttlCommands(t, cmds.since(0), "expireAt")
		return len(modified) > 0
	})
	in.Exit()
	sent := cmds.since(0)
	deletes, deleted := 0, 0
	for _, c := range sent {
		switch c.name {
		case "delete":
			deletes++
			for _, v := range mustValues(t, c.body.Lookup("deletes")) {
				ids := v.Document().Lookup("q", "_id", "$in")
				deleted += len(mustValues(t, ids))
			}
		case "collMod":
			if deletes == 0 {
				t.Errorf("collMod before any delete")
			}
		}
	}
	if deletes != 3 || deleted != 30 {
		t.Errorf("%d delete commands for %d documents, want 3 batches of 10 for 30", deletes, deleted)
	}
	if _, modified := ttlCommands(t, sent, "expireAt"); len(modified) != 1 || modified[0] != 259200 {
		t.Errorf("collMod %v, want one with 259200", modified)
	}
	n, err := e.db.Collection("logs").CountDocuments(ctx, bson.D{{Key: "tag", Value: "old"}})
	if err != nil || n != 10 {
		t.Errorf("%d old documents left (%v), want the 10 not expired under 3d", n, err)
	}
	if !strings.Contains(log.String(), "expires 30 documents at once") {
		t.Errorf("the count is not logged:\n%s", log)
	}
}

// ttl turned on later gives the documents written without it their
// expireAt, in the background, with what each one's rule implies.
func TestTTLBackfill(t *testing.T) {
	e := newDBEnv(t)
	in, _, log := monitored(t, e, "bucket_key", "host")
	mustDone(t, in.Flush("app.log", recent(t, 300, "a", "b", "c")), log)
	in.Exit()
	for _, d := range e.all("logs") {
		if _, err := d.LookupErr("expireAt"); err == nil {
			t.Fatalf("ttl 0 wrote an expireAt: %v", d)
		}
	}
	// Two agents turn TTL on at once.
	props := []string{"bucket_key", "host", "ttl", "1d", "ttl_jitter", "1h", "ttl_rules", "host=a:30d, host=b:2h", "ttl_delete_rate", "1000"}
	in, _, log = monitored(t, e, props...)
	other, _, otherLog := monitored(t, e, props...)
	mustDone(t, in.Flush("app.log", recent(t, 30, "d", "e")), log)
	mustDone(t, other.Flush("app.log", recent(t, 30, "f")), otherLog)
	waitFor(t, "every bucket to get an expireAt", func() bool {
		n, err := e.db.Collection("logs").CountDocuments(context.Background(), bson.D{{Key: "expireAt", Value: bson.D{{Key: "$exists", Value: false}}}})
		return err == nil && n == 0
	})
	in.Exit()
	other.Exit()
	checkRules(t, e.all("logs"), "end", "host", map[string]time.Duration{"a": 30 * 24 * time.Hour, "b": 2 * time.Hour}, 24*time.Hour, time.Hour)
	// Whichever agent starts the backfill says so (the one that finds the
	// last document missing also says when it is done, unless it exits
	// first).
	if !strings.Contains(log.String()+otherLog.String(), "giving the documents of logs without expireAt one") {
		t.Errorf("the backfill is not logged:\n%s%s", log, otherLog)
	}
}

// A backfill under way stops when the instance exits, and the next start
// resumes it.
func TestTTLBackfillStopsOnExit(t *testing.T) {
	e := newDBEnv(t)
	in, _, log := monitored(t, e, "mode", "flat")
	mustDone(t, in.Flush("app.log", recent(t, 20, "a")), log)
	in.Exit()
	missing := func() int64 {
		n, err := e.db.Collection("logs").CountDocuments(context.Background(), bson.D{{Key: "expireAt", Value: bson.D{{Key: "$exists", Value: false}}}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	in, _, log = monitored(t, e, "mode", "flat", "ttl", "1d", "ttl_delete_rate", "1") // one document a second
	mustDone(t, in.Flush("app.log", recent(t, 1, "b")), log)
	waitFor(t, "the backfill to start", func() bool { return missing() < 20 })
	start := time.Now()
	in.Exit()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("exit took %v with a backfill under way", took)
	}
	left := missing()
	if left == 0 {
		t.Fatalf("the backfill finished before exit; nothing to resume")
	}
	in, _, log = monitored(t, e, "mode", "flat", "ttl", "1d", "ttl_delete_rate", "1000")
	mustDone(t, in.Flush("app.log", recent(t, 1, "c")), log)
	waitFor(t, "the resumed backfill", func() bool { return missing() == 0 })
	in.Exit()
	checkRules(t, e.all("logs"), "ts", "host", nil, 24*time.Hour, 0)
}

// checkRules checks that each document's expireAt plus ttl is its anchor
// plus its rule's retention (ttl without a rule), plus a jitter below
// jitter.
func checkRules(t *testing.T, docs []bson.Raw, anchor, field string, rules map[string]time.Duration, ttl, jitter time.Duration) {
	t.Helper()
	if len(docs) == 0 {
		t.Fatal("no documents")
	}
	for _, d := range docs {
		at, ok := d.Lookup("expireAt").TimeOK()
		base, hasBase := d.Lookup(anchor).TimeOK()
		if !ok || !hasBase {
			t.Fatalf("document without expireAt or %s: %v", anchor, d)
		}
		v, err := d.LookupErr(field)
		if err != nil {
			v = d.Lookup("key", field)
		}
		text, isString := v.StringValueOK()
		if !isString {
			text = fmt.Sprint(v.AsInt64())
		}
		keep, ruled := rules[text]
		if !ruled {
			keep = ttl
		}
		if j := at.Add(ttl).Sub(base) - keep; j < 0 || j >= max(jitter, time.Millisecond) {
			t.Errorf("%s=%v: expireAt %v is %v after %s %v; want %v (ttl %v) plus a jitter under %v",
				field, v, at, at.Sub(base), anchor, base, keep-ttl, ttl, jitter)
		}
	}
}

// Per-key rules give each document the expireAt its rule implies: bucket
// mode by bucket_key fields, flat mode by top-level fields, first match
// wins, ttl for the rest.
func TestTTLRules(t *testing.T) {
	t.Run("bucket", func(t *testing.T) {
		e := newDBEnv(t)
		in, _, log := monitored(t, e, "bucket_key", "host", "ttl", "1d", "ttl_jitter", "10m", "ttl_rules", "host=audit:365d, host=dev:1h, host=audit:1m")
		mustDone(t, in.Flush("app.log", recent(t, 200, "audit", "dev", "web1", "web2")), log)
		in.Exit()
		checkRules(t, e.all("logs"), "end", "host", map[string]time.Duration{"audit": 365 * 24 * time.Hour, "dev": time.Hour}, 24*time.Hour, 10*time.Minute)
	})
	t.Run("flat", func(t *testing.T) {
		e := newDBEnv(t)
		in, _, log := monitored(t, e, "mode", "flat", "ttl", "7d", "ttl_rules", "status=500:30d, level=debug:1d")
		mustDone(t, in.Flush("app.log", recent(t, 60, "a")), log)
		in.Exit()
		docs := e.all("logs")
		var errs, debug, other []bson.Raw
		for _, d := range docs {
			switch {
			case d.Lookup("status").AsInt64() == 500:
				errs = append(errs, d)
			case d.Lookup("level").StringValue() == "debug":
				debug = append(debug, d)
			default:
				other = append(other, d)
			}
		}
		if len(errs) == 0 || len(debug) == 0 || len(other) == 0 {
			t.Fatalf("%d, %d, %d documents by rule", len(errs), len(debug), len(other))
		}
		week := 7 * 24 * time.Hour
		checkRules(t, errs, "ts", "status", map[string]time.Duration{"500": 30 * 24 * time.Hour}, week, 0)
		checkRules(t, debug, "ts", "level", map[string]time.Duration{"debug": 24 * time.Hour}, week, 0)
		checkRules(t, other, "ts", "level", nil, week, 0)
	})
}

// dead_letter_ttl gives the dead-letter collection its own TTL index on
// parkedAt; partition week writes to ISO-week collections; capped_max,
// compression and validate go into the collections' creation, and a server
// that refuses an option gets one warning per collection, one that drops
// an option one per option, while every record is stored.
func TestCollectionOptions(t *testing.T) {
	t.Run("dead letters and weeks", func(t *testing.T) {
		e := newDBEnv(t)
		in, cmds, log := monitored(t, e, "mode", "flat", "partition", "week", "partition_keep", "2", "dead_letter_ttl", "30d")
		now := time.Now().UTC()
		var recs [][]byte
		for i, at := range []time.Time{now, now.AddDate(0, 0, -7), now.AddDate(0, 0, -35)} {
			recs = append(recs, record(t, at, kv{"i", i}))
		}
		mustDone(t, in.Flush("app.log", join(recs)), log)
		in.Exit()
		if created, _ := ttlCommands(t, named(cmds.since(0), "createIndexes"), "parkedAt"); len(created) != 1 || created[0] != 30*24*3600 {
			t.Errorf("dead-letter TTL index asked for with %v, want 2592000", created)
		}
		week := func(t time.Time) string {
			y, w := t.ISOWeek()
			return fmt.Sprintf("logs_%04dw%02d", y, w)
		}
		for _, c := range []string{week(now), week(now.AddDate(0, 0, -7))} {
			if n := len(e.all(c)); n != 1 {
				t.Errorf("%s holds %d documents, want 1 (collections %v)", c, n, e.collections())
			}
		}
		if n := len(e.all("logs_dead")); n != 1 {
			t.Errorf("%d records parked, want the one older than the two weeks kept", n)
		}
	})
	t.Run("capped_max", func(t *testing.T) {
		e := newDBEnv(t)
		in, cmds, log := monitored(t, e, "mode", "flat", "capped_size", "1M", "capped_max", "100")
		mustDone(t, in.Flush("app.log", recent(t, 150, "a")), log)
		in.Exit()
		creates := named(cmds.since(0), "create")
		if len(creates) == 0 {
			t.Fatal("no create command")
		}
		c := creates[0].body
		if capped, _ := c.Lookup("capped").BooleanOK(); !capped || c.Lookup("max").AsInt64() != 100 || c.Lookup("size").AsInt64() != 1<<20 {
			t.Errorf("create %v, want capped, size 1M, max 100", c)
		}
	})
	t.Run("compression and validation", func(t *testing.T) {
		for _, mode := range []string{"bucket", "flat"} {
			e := newDBEnv(t)
			in, cmds, log := monitored(t, e, "mode", mode, "compression", "zstd", "validate", "on")
			mustDone(t, in.Flush("app.log", recent(t, 100, "a", "b")), log)
			mustDone(t, in.Flush("app.log", recent(t, 100, "a", "b")), log)
			in.Exit()
			var first bson.Raw
			for _, c := range named(cmds.since(0), "create") {
				if c.body.Lookup("create").StringValue() == "logs" {
					first = c.body
					break
				}
			}
			if first == nil {
				t.Fatalf("%s: no create command for logs", mode)
			}
			if cs := first.Lookup("storageEngine", "wiredTiger", "configString").StringValue(); cs != "block_compressor=zstd" {
				t.Errorf("%s: storage engine options %v", mode, first.Lookup("storageEngine"))
			}
			req, err := first.LookupErr("validator", "$jsonSchema", "required")
			if err != nil {
				t.Fatalf("%s: no $jsonSchema validator: %v", mode, first)
			}
			want := map[string]string{"bucket": `["key","seq","count","logs","minTs","maxTs"]`, "flat": `["ts"]`}[mode]
			if got := strings.ReplaceAll(req.String(), " ", ""); !strings.Contains(got, strings.Trim(want, "[]")) {
				t.Errorf("%s: required %s, want %s", mode, got, want)
			}
			refused := strings.Count(log.String(), "refused to create logs")
			if refused > 1 {
				t.Errorf("%s: %d warnings about logs's options, want at most one:\n%s", mode, refused, log)
			}
			// An option the server took and dropped (listCollections does
			// not show it) gets a warning of its own.
			specs, err := e.db.ListCollectionSpecifications(context.Background(), bson.D{{Key: "name", Value: "logs"}})
			if err != nil || len(specs) != 1 {
				t.Fatalf("%s: collection specs %v, %v", mode, specs, err)
			}
			for option, warning := range map[string]string{"validator": "created logs without its validator", "storageEngine": "created logs without compression zstd"} {
				_, lookup := specs[0].Options.LookupErr(option)
				kept := lookup == nil
				if n := strings.Count(log.String(), warning); kept && n != 0 || !kept && refused == 0 && n != 1 {
					t.Errorf("%s: %s kept %v, %d warnings %q:\n%s", mode, option, kept, n, warning, log)
				}
			}
			n := len(e.all("logs"))
			if mode == "bucket" {
				n = countEntries(t, e, "logs")
			}
			if n != 200 {
				t.Errorf("%s: %d records stored, want 200\n%s", mode, n, log)
			}
		}
	})
}

// keyPatternRefused is a layout.Runner that refuses every collMod naming
// its index by key pattern, as a MongoDB-compatible server without that
// form does, and passes every other command to the server. It keeps the
// index part of each collMod it is given.
type keyPatternRefused struct {
	next layout.Runner
	mu   sync.Mutex
	sent []bson.Raw
}

func (r *keyPatternRefused) Run(ctx context.Context, cmd bson.D) error {
	raw, err := bson.Marshal(cmd)
	if err != nil {
		return err
	}
	index, _ := bson.Raw(raw).Lookup("index").DocumentOK()
	r.mu.Lock()
	r.sent = append(r.sent, index)
	r.mu.Unlock()
	if _, err := index.LookupErr("keyPattern"); err == nil {
		return mongo.CommandError{Code: 1, Name: "InternalError", Message: "operator does not exist: documentdb_core.bson = documentdb_core.bson"}
	}
	return r.next.Run(ctx, cmd)
}

func (r *keyPatternRefused) collMods() []bson.Raw {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bson.Raw(nil), r.sent...)
}

// keeperLog keeps a keeper's lines, each after its level.
type keeperLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *keeperLog) add(level, f string, a []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(f, a...))
}
func (l *keeperLog) Infof(f string, a ...any)  { l.add("info", f, a) }
func (l *keeperLog) Warnf(f string, a ...any)  { l.add("warn", f, a) }
func (l *keeperLog) Debugf(f string, a ...any) { l.add("debug", f, a) }
func (l *keeperLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// A server that refuses collMod by key pattern is asked again by the
// index's name, as listIndexes gives it: the TTL changes in place,
// lowered, raised or given to a plain index (MongoDB 6.0+). Where the name
// form is refused too (the test server refuses collMod in every form, and
// TTL indexes: the index is a plain one there), both forms are tried and
// one warning says so, however often the collection is prepared.
func TestTTLChangedByNameWhenKeyPatternRefused(t *testing.T) {
	const day = 24 * 3600
	for _, c := range []struct {
		name     string
		from, to int64 // expireAfterSeconds; from 0: a plain index
	}{{"lowered", 7 * day, 3 * day}, {"raised", 3 * day, 7 * day}, {"plain index", 0, 3 * day}} {
		t.Run(c.name, func(t *testing.T) {
			e := newDBEnv(t)
			ctx := context.Background()
			ix := mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}}}
			if e.srv.Real && c.from > 0 {
				ix.Options = options.Index().SetExpireAfterSeconds(int32(c.from))
			}
			if _, err := e.db.Collection("logs").Indexes().CreateOne(ctx, ix); err != nil {
				t.Fatal(err)
			}
			kctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var log keeperLog
			k := layout.NewKeeper(kctx, e.db, &log, layout.Limits{BurstLimit: 1000})
			refuser := &keyPatternRefused{}
			k.WrapRunner(func(next layout.Runner) layout.Runner { refuser.next = next; return refuser })
			spec := layout.Spec{TTLField: "expireAt", TTL: time.Duration(c.to) * time.Second}
			for range 2 {
				if err := k.Prepare(ctx, "logs", spec); err != nil {
					t.Fatal(err)
				}
				k.Wait()
			}
			mods := refuser.collMods()
			// A server with collMod by name changes the TTL: the second
			// Prepare finds it done. One without it (the test server; a
			// plain index on a server before MongoDB 6.0 or on FerretDB
			// v2) refuses that form too, and is asked in both forms at
			// each Prepare with one warning.
			got := ttlOf(t, e, "expireAt_1")
			changed := got != nil && *got == c.to
			if e.srv.Real && c.from > 0 && !changed {
				t.Errorf("index expireAt_1 expires after %s, want %ds: a server with TTL indexes changes them by name\n%s", seconds(got), c.to, &log)
			}
			if changed {
				if len(mods) != 2 {
					t.Fatalf("collMod sent with %v, want by key pattern then by name, once\n%s", mods, &log)
				}
				if !strings.Contains(log.String(), "info changed the TTL of index {expireAt: 1} on logs") || strings.Contains(log.String(), "warn ") {
					t.Errorf("want the change logged, no warning:\n%s", &log)
				}
			} else {
				if len(mods) != 4 {
					t.Fatalf("collMod sent with %v, want by key pattern then by name, at each Prepare\n%s", mods, &log)
				}
				if n := strings.Count(log.String(), "warn "); n != 1 || !strings.Contains(log.String(), "by name expireAt_1") ||
					!strings.Contains(log.String(), "do not expire by this ttl") {
					t.Errorf("%d warnings, want one about the ttl, naming both forms:\n%s", n, &log)
				}
			}
			for i, m := range mods {
				pattern, byPattern := m.Lookup("keyPattern").DocumentOK()
				name, byName := m.Lookup("name").StringValueOK()
				switch {
				case m.Lookup("expireAfterSeconds").AsInt64() != c.to:
					t.Errorf("collMod %d: %v, want expireAfterSeconds %d", i, m, c.to)
				case i%2 == 0 && (!byPattern || pattern.String() != `{"expireAt": {"$numberInt":"1"}}`):
					t.Errorf("collMod %d: %v, want by key pattern {expireAt: 1}", i, m)
				case i%2 == 1 && (!byName || name != "expireAt_1"):
					t.Errorf("collMod %d: %v, want by name expireAt_1", i, m)
				}
			}
		})
	}
}

// seconds is an expireAfterSeconds as ttlOf gives it, as a test reports it.
func seconds(after *int64) string {
	if after == nil {
		return "never (no TTL)"
	}
	return fmt.Sprintf("%ds", *after)
}

// ttlOf is the expireAfterSeconds of the index of logs called name; nil
// when it has none.
func ttlOf(t *testing.T, e *env, name string) *int64 {
	t.Helper()
	specs, err := e.db.Collection("logs").Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == name && s.ExpireAfterSeconds != nil {
			v := int64(*s.ExpireAfterSeconds)
			return &v
		}
	}
	return nil
}
