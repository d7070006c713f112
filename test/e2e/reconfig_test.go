package e2e

// A chunk stored, the agent restarted with one setting changed, the chunk
// resent (filesystem storage resends what was in flight at a stop). The
// resend is found by comparing the chunk's records, as the new settings
// build them, with the entries of the groups the new settings give: a
// change of where records go, of their grouping or of their entries' bytes
// makes the resend store them again. Flat documents' ids derive from the
// chunk alone, so there only where they go counts. README, Delivery
// semantics, lists the same keys.

import (
	"testing"
	"time"
)

// reconfigs are the settings changed between a chunk's attempts, and
// whether its resend is stored again, in bucket and in flat mode.
var reconfigs = []struct {
	key, value  string
	bucket, flt bool
}{
	{"collection", "other", true, true},
	{"database", "", true, true}, // value: another database
	{"mode", "", true, true},     // value: the other mode
	{"partition", "day", true, true},
	{"bucket_key", "module", true, false},
	{"bucket_window", "1h", true, false},
	{"tag_key", "source", true, false},
	{"time_key", "time", true, false},
	{"exclude_fields", "cost", true, false},
	{"include_fields", "id,msg", true, false},
	{"types", "cost:int", true, false},
	{"key_replace_dot", "-", true, false},
	{"keep_metadata", "on", true, false},
	{"parser", "json", true, false},
	{"idempotent", "off", true, false},
	{"agent_id", "another", true, true},
	// Settings that change neither: the resend adds nothing.
	{"stats", "cost", false, false},
	{"count_by", "level", false, false},
	{"keep_values", "module", false, false},
	{"bucket_max_records", "500", false, false},
	{"write_batch", "5", false, false},
	{"ttl", "1d", false, false},
	{"flush_timeout", "1m", false, false},
}

func TestDeliveryResendAfterConfigChange(t *testing.T) {
	// At 10:30, so that a window of 1h starts elsewhere than one of 1m.
	at := time.Date(2025, 6, 1, 10, 30, 0, 0, time.UTC)
	var recs [][]byte
	for i, id := range []string{"A", "B", "C", "D", "E"} {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Second), kv{"id", id}, kv{"msg", "m"},
			kv{"module", []string{"pay", "auth"}[i%2]}, kv{"level", "info"}, kv{"cost", "12"}, kv{"a.b", 1},
			kv{"log", `{"x":1}`}))
	}
	for _, mode := range deliveryModes {
		for _, c := range reconfigs {
			if mode == "flat" && (c.key == "bucket_key" || c.key == "bucket_window" || c.key == "idempotent" ||
				c.key == "stats" || c.key == "count_by" || c.key == "keep_values" || c.key == "bucket_max_records") {
				continue // bucket settings
			}
			t.Run(mode+"/"+c.key, func(t *testing.T) {
				e := newEnv(t)
				chunk := chunkFile(t, t.TempDir(), "c", recs...)
				before := e.props("mode", mode)
				after := e.props("mode", mode, c.key, c.value)
				otherDB := e.dbName + "_2"
				switch c.key {
				case "database":
					after["database"] = otherDB
					t.Cleanup(func() { e.db.Client().Database(otherDB).Drop(t.Context()) })
				case "mode":
					after["mode"] = map[string]string{"bucket": "flat", "flat": "bucket"}[mode]
				}
				e.init("a", before)
				e.mustFlush("a", "app", chunk)
				e.exit("a")
				e.restartHost()
				e.init("a", after)
				e.mustFlush("a", "app", chunk)
				e.exit("a")
				n := 0
				for _, db := range []string{e.dbName, otherDB} {
					colls, err := e.db.Client().Database(db).ListCollectionNames(t.Context(), map[string]any{})
					if err != nil {
						t.Fatal(err)
					}
					for _, coll := range colls {
						if coll == "logs_dead" || coll == "other_dead" {
							continue
						}
						sub := &env{t: t, srv: e.srv, db: e.db.Client().Database(db), dbName: db}
						count, _ := sub.storedIDs(coll)
						n += count["A"]
					}
				}
				want := 1
				if (mode == "bucket" && c.bucket) || (mode == "flat" && c.flt) {
					want = 2
				}
				if n != want {
					t.Errorf("%s %s -> %s: record A stored %d times, want %d", mode, c.key, c.value, n, want)
				}
			})
		}
	}
}
