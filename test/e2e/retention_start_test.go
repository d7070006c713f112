package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/netproxy"
)

// collModsByCollection returns, for each collection, the
// expireAfterSeconds of the last collMod that named its index on field by
// key pattern.
func collModsByCollection(t *testing.T, sent []sentCommand, field string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, c := range named(sent, "collMod") {
		ix := c.body.Lookup("index").Document()
		if pattern, ok := ix.Lookup("keyPattern").DocumentOK(); ok && pattern.Lookup(field).Type != bson.Type(0) {
			out[c.body.Lookup("collMod").StringValue()] = ix.Lookup("expireAfterSeconds").AsInt64()
		}
	}
	return out
}

// expireAtIndex gives coll an index on expireAt: a TTL index of after
// seconds on a server that has them, a plain one on the test server (which
// refuses TTL indexes: it stands for one made by a server that had them).
func expireAtIndex(t *testing.T, e *env, coll string, after int32) {
	t.Helper()
	ix := mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}}}
	if e.srv.Real {
		ix.Options = options.Index().SetExpireAfterSeconds(after)
	}
	if _, err := e.db.Collection(coll).Indexes().CreateOne(context.Background(), ix); err != nil {
		t.Fatal(err)
	}
}

// A restart with a lower ttl changes the existing index at start, with
// no record flushed: a quiet output does not keep its old retention.
// (The test server has neither TTL indexes nor collMod: there the test
// checks what the plugin sends.)
func TestTTLAppliedAtStart(t *testing.T) {
	e := newDBEnv(t)
	in, cmds, log := monitored(t, e, "ttl", "1d")
	mustDone(t, in.Flush("app.log", recent(t, 20, "a")), log)
	in.Exit()
	if created, _ := ttlCommands(t, cmds.since(0), "expireAt"); len(created) != 1 || created[0] != 86400 {
		t.Fatalf("TTL index asked for with %v, want once with 86400", created)
	}
	if !e.srv.Real {
		expireAtIndex(t, e, "logs", 0)
	}

	in, cmds, log = monitored(t, e, "ttl", "12h")
	waitFor(t, "the TTL change at start", func() bool {
		return collModsByCollection(t, cmds.since(0), "expireAt")["logs"] == 43200
	})
	if e.srv.Real {
		waitFor(t, "index expireAt_1 at 43200 s", func() bool {
			got := ttlOf(t, e, "expireAt_1")
			return got != nil && *got == 43200
		})
		if !strings.Contains(log.String(), "changed the TTL of index {expireAt: 1} on logs from 86400s to 43200s") {
			t.Errorf("the change is not logged:\n%s", log)
		}
	} else {
		waitFor(t, "the outcome of the collMod", func() bool {
			return strings.Contains(log.String(), "TTL of index {expireAt: 1} on logs from none to 43200s")
		})
	}
	in.Exit()
	if n := len(named(cmds.since(0), "insert")) + len(named(cmds.since(0), "update")); n != 0 {
		t.Errorf("%d writes: nothing was flushed", n)
	}
}

// With a collection template, the TTL applied at start reaches every
// existing collection the template can give, and none other: not a
// collection of another name, nor a dead-letter collection (which keeps
// dead_letter_ttl).
func TestTTLAppliedAtStartTemplated(t *testing.T) {
	e := newDBEnv(t)
	for _, c := range []string{"logs_app", "logs_web", "other", "logs_app_dead"} {
		if err := e.db.CreateCollection(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		expireAtIndex(t, e, c, 86400)
	}
	in, cmds, log := monitored(t, e, "collection", "logs_$TAG[0]", "ttl", "12h")
	waitFor(t, "the TTL change of logs_app and logs_web", func() bool {
		got := collModsByCollection(t, cmds.since(0), "expireAt")
		return got["logs_app"] == 43200 && got["logs_web"] == 43200
	})
	in.Exit()
	got := collModsByCollection(t, cmds.since(0), "expireAt")
	for _, c := range []string{"other", "logs_app_dead"} {
		if _, ok := got[c]; ok {
			t.Errorf("the TTL of %s was changed: it is no target of logs_$TAG[0]\n%s", c, log)
		}
	}
	if e.srv.Real {
		for _, c := range []string{"other", "logs_app_dead"} {
			specs, err := e.db.Collection(c).Indexes().ListSpecifications(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range specs {
				if s.Name == "expireAt_1" && (s.ExpireAfterSeconds == nil || *s.ExpireAfterSeconds != 86400) {
					t.Errorf("%s's index expireAt_1 changed to %v", c, s.ExpireAfterSeconds)
				}
			}
		}
	}
}

// partition_keep drops the partitions before the kept range at start,
// with no record flushed.
func TestPartitionKeepAppliedAtStart(t *testing.T) {
	e := newEnv(t)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	name := func(d time.Time) string { return "logs_" + d.Format("20060102") }
	old, older, kept := name(today.AddDate(0, 0, -5)), name(today.AddDate(0, 0, -40)), name(today.AddDate(0, 0, -2))
	for _, c := range []string{old, older, kept, "logs_notes"} {
		if _, err := e.db.Collection(c).InsertOne(context.Background(), bson.D{{Key: "seq", Value: 0}}); err != nil {
			t.Fatal(err)
		}
	}
	e.init("p", e.props("partition", "day", "partition_keep", "3"))
	waitFor(t, "the old partitions to be dropped", func() bool {
		return !slices.Contains(e.collections(), old) && !slices.Contains(e.collections(), older)
	})
	for _, c := range []string{old, older} {
		if !waitLog(e.host, "dropped partition "+c) {
			t.Errorf("the drop of %s is not logged:\n%s", c, e.host.Stderr())
		}
	}
	e.exit("p")
	if now := time.Now().UTC().Truncate(24 * time.Hour); !now.Equal(today) {
		t.Skip("the UTC day changed during the test; the kept range moved with it")
	}
	if got := e.collections(); !slices.Equal(got, []string{kept, "logs_notes"}) {
		t.Errorf("collections %v, want %v: the kept partition and a collection of another name stay", got, []string{kept, "logs_notes"})
	}
}

// The server is down when the plugin starts: Init returns FLB_OK at once,
// and the retention (here a lower ttl) is applied once the server answers,
// with no record flushed.
func TestRetentionAtStartWaitsForServer(t *testing.T) {
	e := newEnv(t)
	if err := e.db.CreateCollection(context.Background(), "logs"); err != nil {
		t.Fatal(err)
	}
	expireAtIndex(t, e, "logs", 86400)
	sw := switched(t, e)
	if err := sw.Down(); err != nil {
		t.Fatal(err)
	}
	props := e.props("uri", viaProxy(e.srv.URI, sw.Addr()), "ttl", "12h", "connect_timeout", "1s", "flush_timeout", "2s",
		"plugin_log_level", "debug")
	start := time.Now()
	rc, err := e.host.Init("r", props)
	if err != nil || rc != harness.FLBOK {
		t.Fatalf("init with the server down: rc %d err %v\n%s", rc, err, e.host.Stderr())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("init with the server down took %v: it must not wait for the server", took)
	}
	// One attempt failed (the server is down), then the server is up.
	if !waitLog(e.host, "applying retention (ttl, partition_keep) at start, attempt 1") {
		t.Fatalf("no failed attempt logged:\n%s", e.host.Stderr())
	}
	if err := sw.Up(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the TTL change once the server is up", func() bool {
		return strings.Contains(e.host.Stderr(), "TTL of index {expireAt: 1} on logs from")
	})
	e.exit("r")
	want := "from none to 43200s" // the test server: a plain index, and collMod refused
	if e.srv.Real {
		want = "changed the TTL of index {expireAt: 1} on logs from 86400s to 43200s"
		if got := ttlOf(t, e, "expireAt_1"); got == nil || *got != 43200 {
			t.Errorf("index expireAt_1 expires after %s, want 43200s", seconds(got))
		}
	}
	if !strings.Contains(e.host.Stderr(), want) {
		t.Errorf("want %q in the log:\n%s", want, e.host.Stderr())
	}
}

// viaProxy is uri with its host replaced by the proxy at addr, and a
// direct connection (a replica set member would name itself, not the
// proxy).
func viaProxy(uri, addr string) string {
	scheme, rest, _ := strings.Cut(uri, "://")
	userinfo := ""
	if i := strings.LastIndexByte(rest, '@'); i >= 0 && !strings.ContainsAny(rest[:i], "/?") {
		userinfo, rest = rest[:i+1], rest[i+1:]
	}
	path := "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		path = rest[i:]
		if path[0] == '?' {
			path = "/" + path
		}
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return scheme + "://" + userinfo + addr + path + sep + "directConnection=true"
}

// switched is a Switch proxy in front of e's server, closed when t ends.
func switched(t *testing.T, e *env) *netproxy.Switch {
	t.Helper()
	host := e.srv.URI[strings.Index(e.srv.URI, "://")+3:]
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	if strings.HasPrefix(e.srv.URI, "mongodb+srv://") || strings.Contains(host, ",") {
		t.Skip("puts a proxy in front of the server: needs a mongodb:// uri of one host (a standalone or the primary)")
	}
	sw, err := netproxy.StartSwitch(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sw.Close() })
	return sw
}
