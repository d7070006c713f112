package e2e

// Records that carry their own event id (id_key, mode flat). The event id
// is the stored document's _id, so an event is stored once however many
// agents send it, and again in a new chunk (a replay) or in the same bytes
// flushed twice: with id_action keep the first stored wins, with replace
// the last one sent. A record without the field keeps the plugin's ids and
// its delivery as before (one copy per chunk answered FLB_OK); a record
// whose value cannot be an _id is parked.

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
)

// withoutField is doc without its field named name.
func withoutField(doc bson.Raw, name string) bson.Raw {
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return doc
	}
	out := d[:0]
	for _, e := range d {
		if e.Key != name {
			out = append(out, e)
		}
	}
	b, _ := bson.Marshal(out)
	return b
}

// evRecord is a record of event eid (no eid field when eid is nil) in
// version v, with more fields after.
func evRecord(t *testing.T, ts time.Time, eid any, v string, more ...kv) []byte {
	body := []kv{{"v", v}}
	if eid != nil {
		body = append([]kv{{"eid", eid}}, body...)
	}
	return record(t, ts, append(body, more...)...)
}

// byVersion returns the flat documents of coll by their field v.
func (e *env) byVersion(coll string) map[string][]bson.Raw {
	e.t.Helper()
	out := map[string][]bson.Raw{}
	for _, d := range e.all(coll) {
		v, _ := d.Lookup("v").StringValueOK()
		out[v] = append(out[v], d)
	}
	return out
}

// Two agents (two plugin instances) send the same events in chunks of
// their own; one replays some in a new chunk, flushes that chunk's very
// bytes again (both answered FLB_OK), restarts and resends it (its
// acknowledgement lost). Each event is stored once: its first version with
// keep, its last with replace, whole (no field of an earlier version is
// left). An integer id sent as 7 and as 7.0 is one event. The record
// without an event id is stored once per chunk answered FLB_OK (twice), as
// without id_key, and not again by the resend.
func TestIDKeyAgentsAndReplays(t *testing.T) {
	for _, action := range []string{"keep", "replace"} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t)
			dir := t.TempDir()
			at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
			a := chunkFile(t, dir, "a", evRecord(t, at, "E1", "a1"), evRecord(t, at, "E2", "a2", kv{"onlyA", true}),
				evRecord(t, at, 7, "a3"))
			b := chunkFile(t, dir, "b", evRecord(t, at.Add(time.Second), "E1", "b1"), evRecord(t, at, "E2", "b2"),
				evRecord(t, at, 7.0, "b3"))
			replay := chunkFile(t, dir, "replay", evRecord(t, at.Add(time.Minute), "E1", "r1"),
				evRecord(t, at, "E3", "r3"), evRecord(t, at, nil, "none"))
			props := e.props("mode", "flat", "id_key", "eid", "id_action", action, "ttl", "1d")
			e.init("a", props)
			e.init("b", props)
			e.mustFlush("a", "app", a)
			e.mustFlush("b", "app", b)
			e.mustFlush("a", "app", replay)
			e.mustFlush("a", "app", replay) // the same bytes, a new chunk
			e.exit("b")
			e.resendInNewProcess("a", props, "app", replay)
			e.exit("a")

			want := map[string]string{"E1": "a1", "E2": "a2", "7": "a3", "E3": "r3"}
			if action == "replace" {
				want = map[string]string{"E1": "r1", "E2": "b2", "7": "b3", "E3": "r3"}
			}
			got := map[string]string{}
			none := 0
			for _, d := range e.all("logs") {
				id, v := d.Lookup("_id"), d.Lookup("v").StringValue()
				if v == "none" {
					none++
					if id.Type != bson.TypeObjectID {
						t.Errorf("record without eid has _id %v, want the plugin's ObjectID", id)
					}
					continue
				}
				key := id.String()
				if s, ok := id.StringValueOK(); ok {
					key = s
				} else if n, ok := id.Int32OK(); ok && n == 7 {
					key = "7"
				} else {
					t.Errorf("_id %v (type %v): want the event id, integers as int32", id, id.Type)
				}
				if prev, dup := got[key]; dup {
					t.Errorf("event %s stored twice (%s and %s)", key, prev, v)
				}
				got[key] = v
				if _, ok := d.Lookup("eid").StringValueOK(); !ok && key != "7" {
					t.Errorf("event %s: the eid field is not kept in the document", key)
				}
				if _, has := d.LookupErr("onlyA"); has == nil && v != "a2" {
					t.Errorf("event %s version %s holds onlyA of version a2: merged, not replaced", key, v)
				}
				// ttl 1d without jitter: the TTL index expires it a day
				// after expireAt, which is its time.
				if ts, exp := d.Lookup("ts").Time(), d.Lookup("expireAt").Time(); !exp.Equal(ts) {
					t.Errorf("event %s: expireAt %v, want its time %v", key, exp, ts)
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("event %s: stored version %q, want %q (stored: %v)", k, got[k], v, got)
				}
			}
			if len(got) != len(want) {
				t.Errorf("stored events %v, want %v", got, want)
			}
			if none != 2 {
				t.Errorf("record without eid stored %d times, want 2 (two chunks answered FLB_OK)", none)
			}
			if dead := e.all("logs_dead"); len(dead) != 0 {
				t.Errorf("%d records parked", len(dead))
			}
		})
	}
}

// A record whose event id cannot be an _id (an array, a document, a
// fraction, an empty string, a boolean, null) is parked with a reason that
// names the field and what it holds; the chunk's other records are stored.
func TestIDKeyUnusableValuesParked(t *testing.T) {
	e := newEnv(t)
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	bad := map[string]any{"array": []string{"a"}, "document": map[string]any{"x": 1}, "fraction": 1.5,
		"empty": "", "bool": true, "null": nil}
	recs := [][]byte{evRecord(t, at, "E1", "ok"), evRecord(t, at, nil, "none")}
	for v, eid := range bad {
		recs = append(recs, record(t, at, kv{"eid", eid}, kv{"v", v}))
	}
	chunk := chunkFile(t, t.TempDir(), "bad", recs...)
	e.init("a", e.props("mode", "flat", "id_key", "eid"))
	e.mustFlush("a", "app", chunk)
	e.exit("a")
	stored := e.byVersion("logs")
	if len(stored["ok"]) != 1 || len(stored["none"]) != 1 || len(stored) != 2 {
		t.Errorf("stored %d documents, want the record with an id and the one without", len(e.all("logs")))
	}
	reasons := map[string]string{
		"array": `id_key "eid" holds a value of type array`, "document": `id_key "eid" holds a value of type embedded document`,
		"fraction": `id_key "eid" holds the double 1.5`, "empty": `id_key "eid" holds an empty string`,
		"bool": `id_key "eid" holds a value of type boolean`, "null": `id_key "eid" holds a value of type null`,
	}
	dead := e.all("logs_dead")
	if len(dead) != len(bad) {
		t.Errorf("%d records parked, want %d", len(dead), len(bad))
	}
	for _, d := range dead {
		reason := d.Lookup("reason").StringValue()
		ok := false
		for _, want := range reasons {
			ok = ok || strings.HasPrefix(reason, want)
		}
		if !ok {
			t.Errorf("parked with reason %q, want one naming the field and the value's type", reason)
		}
	}
}

// id_key in bucket mode fails Init, naming the key, the value and why.
func TestIDKeyNeedsFlatMode(t *testing.T) {
	h := startHost(t)
	rc, err := h.Init("a", map[string]string{"uri": "mongodb://127.0.0.1:1", "id_key": "eid"})
	if err != nil {
		t.Fatal(err)
	}
	if rc != harness.FLBError {
		t.Fatalf("init rc %d, want FLB_ERROR", rc)
	}
	if !waitLog(h, `id_key: invalid value "eid": needs mode flat`) {
		t.Errorf("log does not name the key, value and why:\n%s", h.Stderr())
	}
}

// Exactly once across a lost reply and a retry: the write of the records
// with an event id (with replace, the replace command; with keep, the one
// insert of all records) applies with its reply lost and the server goes
// away, so the chunk is answered Retry; once it is back the chunk's resend
// is Done, and every record, with an event id or without, is stored once,
// and counted once: stored or found over the attempts.
func TestIDKeyExactlyOnceAcrossRetry(t *testing.T) {
	for _, action := range []string{"keep", "replace"} {
		t.Run(action, func(t *testing.T) {
			e := newDBEnv(t)
			at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
			chunk := join([][]byte{evRecord(t, at, "E1", "e1"), evRecord(t, at, nil, "n1"),
				evRecord(t, at, int64(1)<<40, "e2"), evRecord(t, at, nil, "n2")})
			opt := modeSinkOptions("flat")
			opt.IDKey, opt.IDReplace = "eid", action == "replace"
			failAt := 1 // keep: one insert of all four
			if action == "replace" {
				failAt = 2 // the insert of the two without an id, then the replace
			}
			fs := &faultStore{Store: e.store(), failAt: failAt, err: errNetwork, apply: true, down: true}
			s := e.newSink(opt, fs, fs.retry())
			first := flushSink(t, s, "app", chunk, sink.Retry)
			fs.heal()
			second := flushSink(t, s, "app", chunk, sink.Done)
			stored := e.byVersion("logs")
			for _, v := range []string{"e1", "e2", "n1", "n2"} {
				if n := len(stored[v]); n != 1 {
					t.Errorf("record %s stored %d times, want once", v, n)
				}
			}
			if id, ok := stored["e2"]; ok && len(id) == 1 && id[0].Lookup("_id").Type != bson.TypeInt64 {
				t.Errorf("e2 has _id %v, want the int64 %d", id[0].Lookup("_id"), int64(1)<<40)
			}
			if n := first.Stored + first.Found + second.Stored + second.Found; n != 4 || second.Parked != 0 {
				t.Errorf("stored %d + found %d, then stored %d + found %d, parked %d: want 4 counted once, none parked",
					first.Stored, first.Found, second.Stored, second.Found, second.Parked)
			}
			if _, injected := fs.count(); injected == 0 {
				t.Error("no fault injected")
			}
		})
	}
}

// With replace, replacements go out write_batch to a command (they are
// update statements, which some servers cannot take many of at once); the
// same chunk flushed again writes nothing, its documents being stored
// exactly as sent, and counts them as found.
func TestIDKeyReplaceBatches(t *testing.T) {
	e := newDBEnv(t)
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	var recs [][]byte
	for i := 0; i < 45; i++ {
		recs = append(recs, evRecord(t, at, i, "v"))
	}
	chunk := join(recs)
	opt := modeSinkOptions("flat") // write_batch 20
	opt.IDKey, opt.IDReplace = "eid", true
	fs := &faultStore{Store: e.store()}
	s := e.newSink(opt, fs, fastRetry)
	res := flushSink(t, s, "app", chunk, sink.Done)
	if writes, _ := fs.count(); writes != 3 || res.Stored != 45 {
		t.Errorf("%d write commands storing %d, want 3 (45 replacements, 20 a command) storing 45", writes, res.Stored)
	}
	before := e.all("logs")
	// The same chunk again (a new chunk with the same bytes): written
	// again at a newer version, so that no write sent before it can land
	// over it; the documents are the same but for their version.
	again := flushSink(t, s, "app", chunk, sink.Done)
	if writes, _ := fs.count(); writes != 6 || again.Stored != 45 || again.Found != 0 {
		t.Errorf("the same chunk again: %d more write commands, stored %d, found %d; want 3, 45, 0",
			writes-3, again.Stored, again.Found)
	}
	after := e.all("logs")
	if len(after) != 45 {
		t.Fatalf("%d documents, want 45", len(after))
	}
	byID := map[string]bson.Raw{}
	for _, d := range before {
		byID[d.Lookup(model.ID).String()] = d
	}
	for _, d := range after {
		old := byID[d.Lookup(model.ID).String()]
		v0, _ := old.Lookup(model.Version).Int64OK()
		v1, _ := d.Lookup(model.Version).Int64OK()
		if v1 <= v0 || !bytes.Equal(withoutField(old, model.Version), withoutField(d, model.Version)) {
			t.Errorf("document %v: version %d then %d, want a newer one and the same fields otherwise:\n%s\n%s", d.Lookup(model.ID), v0, v1, old, d)
		}
	}
}

// id_key with templated targets: each event is stored once in the
// database and collection its tag and fields name, with keep the first
// version, with replace the last, also when the database is a template.
func TestIDKeyTemplatedTargets(t *testing.T) {
	for _, action := range []string{"keep", "replace"} {
		t.Run(action, func(t *testing.T) {
			e := newEnv(t)
			client := e.db.Client()
			db := e.dbName + "_a"
			t.Cleanup(func() { _ = client.Database(db).Drop(context.Background()) })
			at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
			dir := t.TempDir()
			first := chunkFile(t, dir, "first", evRecord(t, at, "E1", "v1", kv{"app", "web"}), evRecord(t, at, "E2", "v1", kv{"app", "db"}))
			second := chunkFile(t, dir, "second", evRecord(t, at, "E1", "v2", kv{"app", "web"}), evRecord(t, at, "E2", "v2", kv{"app", "db"}))
			props := e.props("mode", "flat", "id_key", "eid", "id_action", action,
				"database", e.dbName+"_$TAG[1]", "collection", "logs_$app")
			e.init("a", props)
			e.mustFlush("a", "k.a", first)
			e.mustFlush("a", "k.a", second)
			e.exit("a")
			want := "v1"
			if action == "replace" {
				want = "v2"
			}
			sub := &env{t: t, db: client.Database(db)}
			for coll, eid := range map[string]string{"logs_web": "E1", "logs_db": "E2"} {
				docs := sub.all(coll)
				if len(docs) != 1 {
					t.Errorf("%s.%s holds %d documents, want event %s once", db, coll, len(docs), eid)
					continue
				}
				if id, v := docs[0].Lookup("_id").StringValue(), docs[0].Lookup("v").StringValue(); id != eid || v != want {
					t.Errorf("%s.%s holds %s version %s, want %s version %s", db, coll, id, v, eid, want)
				}
			}
		})
	}
}

// A record the server chokes on, among records that carry an event id,
// is parked with the reason and the others stored once, whether they are
// inserted (keep) or replaced by _id (replace), each under its event id.
// With keep, a record parked leaves a stand-in under its event id
// ({_id, sealed: true}): its insert may still be in the network.
func TestIDKeyRecordServerChokesOn(t *testing.T) {
	t.Parallel() // waits on lost connections, not the CPU
	for _, action := range []string{"keep", "replace"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			at := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
			var recs [][]byte
			var ids []string
			for i := range 32 {
				id := fmt.Sprintf("r%03d", i)
				body := []kv{{"id", id}, {"eid", "E" + id}, {"msg", "hello"}}
				if v, ok := chokeValues[i]; ok {
					body = append(body, kv{"v", v})
				}
				recs = append(recs, record(t, at.Add(time.Duration(i)*10*time.Millisecond), body...))
				ids = append(ids, id)
			}
			chunk := chunkFile(t, t.TempDir(), "choke", recs...)
			e.init("a", e.props("mode", "flat", "id_key", "eid", "id_action", action, "flush_timeout", "5m"))
			e.mustFlush("a", "app", chunk)
			e.exit("a")
			e.checkStoredOrParked(ids, chokeValues)
			standIns := 0
			for _, d := range e.all("logs") {
				if sealed, _ := d.Lookup("sealed").BooleanOK(); sealed {
					standIns++
					continue
				}
				id, _ := d.Lookup("id").StringValueOK()
				if eid, _ := d.Lookup("_id").StringValueOK(); eid != "E"+id {
					t.Errorf("record %s stored with _id %v, want its event id E%s", id, d.Lookup("_id"), id)
				}
			}
			// One per record parked (a server that stores the values
			// parks none): with replace, a stand-in at the attempt's
			// version fences the record's replacements.
			if want := len(e.all("logs_dead")); standIns != want {
				t.Errorf("%d stand-ins, want %d (one per record parked)", standIns, want)
			}
		})
	}
}

// With keep, a record counts as already stored only when its event was
// there before: an insert refused for some events counts the others, which
// it wrote, as stored. Event a3 stored, then a3-a6 sent: 3 stored, 1 found.
// In a fresh collection, 11 records: 5 events, 3 repeats of them within
// the chunk and 3 values that cannot be an _id: 5 stored, 3 found, 3 parked.
func TestIDKeyKeepCounts(t *testing.T) {
	e := newDBEnv(t)
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	opt := modeSinkOptions("flat")
	opt.IDKey = "eid"
	s := e.newSink(opt, e.store(), fastRetry)
	ev := func(ids ...any) []byte {
		var recs [][]byte
		for i, id := range ids {
			recs = append(recs, evRecord(t, at, id, fmt.Sprint("v", i)))
		}
		return join(recs)
	}
	if res := flushSink(t, s, "app", ev("a3"), sink.Done); res.Stored != 1 {
		t.Fatalf("a3: %d stored, want 1", res.Stored)
	}
	if res := flushSink(t, s, "app", ev("a3", "a4", "a5", "a6"), sink.Done); res.Stored != 3 || res.Found != 1 {
		t.Errorf("a3-a6 with a3 stored: %d stored, %d found, want 3 and 1", res.Stored, res.Found)
	}
	opt.Collection = "fresh"
	s = e.newSink(opt, e.store(), fastRetry)
	res := flushSink(t, s, "app", ev("b1", "b2", true, "b1", "b3", 1.5, "b2", "b4", "", "b5", "b1"), sink.Done)
	if res.Stored != 5 || res.Found != 3 || res.Parked != 3 {
		t.Errorf("11 records, 5 events: %d stored, %d found, %d parked, want 5, 3 and 3", res.Stored, res.Found, res.Parked)
	}
	if n := len(e.all("fresh")); n != 5 {
		t.Errorf("%d documents, want 5", n)
	}
}
