package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// fixtureSetup is how a fixture is sent: the plugin properties its records
// need and the decoder options that give the expected entries.
type fixtureSetup struct {
	props []string
	types string
}

// setups names the fixtures that need more than the defaults; every other
// chunk-*.msgpack file is sent with the defaults.
var setups = map[string]fixtureSetup{
	"chunk-app-json-5000.msgpack": {props: []string{"stats", "cost", "count_by", "level"}},
	"chunk-apache2-5000.msgpack": {props: []string{"types", "code:int,size:int", "stats", "size", "count_by", "code"},
		types: "code:int,size:int"},
	"chunk-apache2-8.msgpack": {props: []string{"types", "code:int,size:int", "stats", "size", "count_by", "code"},
		types: "code:int,size:int"},
}

// fixtures lists every chunk fixture.
func fixtures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(fixture("chunk-*.msgpack"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chunk fixtures: %v", err)
	}
	return files
}

// expected decodes a fixture as the plugin does under setup s.
func expected(t *testing.T, file string, s fixtureSetup) []bson.Raw {
	t.Helper()
	opt := parser.Options{}
	if s.types != "" {
		types, err := parser.ParseTypeSpec(s.types)
		if err != nil {
			t.Fatal(err)
		}
		opt.Types = types
	}
	return decodeFixture(t, join(chunkRecords(t, file)), opt)
}

// Every fixture chunk lands exactly once through the real .so: stored
// entries equal the records sent (byte for byte, as a multiset), no bucket
// exceeds either bound, and stats and counts equal a recomputation; with
// the default bounds, with small bounds that force roll-over, and in flat
// mode. Sending each chunk a second time adds nothing.
func TestBucketEveryFixtureExactlyOnce(t *testing.T) {
	small := limits{records: 100, bytes: 64 << 10}
	modes := []struct {
		name  string
		props []string
		lim   limits
	}{
		{"default", nil, defaultLimits},
		{"small", []string{"bucket_max_records", "100", "bucket_max_bytes", "64K"}, small},
		{"flat", []string{"mode", "flat"}, limits{}},
	}
	for _, file := range fixtures(t) {
		name := filepath.Base(file)
		s := setups[name]
		want := expected(t, file, s)
		for _, m := range modes {
			t.Run(strings.TrimSuffix(name, ".msgpack")+"/"+m.name, func(t *testing.T) {
				e := newEnv(t)
				props := m.props
				if m.name != "flat" {
					props = append(append([]string(nil), m.props...), s.props...)
				} else if s.types != "" {
					props = append(append([]string(nil), m.props...), "types", s.types)
				}
				pm := e.props(props...)
				e.init("a", pm)
				e.mustFlush("a", "app.log", file)
				e.resendInNewProcess("a", pm, "app.log", file) // must add nothing
				e.exit("a")
				if m.name == "flat" {
					checkFlat(t, e.all("logs"), want, "app.log")
				} else {
					sameEntries(t, checkBuckets(t, e.all("logs"), m.lim), want)
				}
				if dead := e.all("logs_dead"); len(dead) != 0 {
					t.Errorf("%d records parked, want none: %v", len(dead), dead[0])
				}
			})
		}
	}
}

// The app chunk with other groupings: by module (5 keys x 3 windows), and
// without windows by traceId (a bucket per record, so a slice of the chunk
// keeps the test fast on the test server).
func TestBucketAppGroupings(t *testing.T) {
	file := fixture("chunk-app-json-5000.msgpack")
	recs := chunkRecords(t, file)
	cases := []struct {
		name  string
		recs  int
		props []string
		lim   limits
		// keys is how many distinct bucket keys are expected.
		keys int
	}{
		{"module", 5000, []string{"bucket_key", "module"}, defaultLimits, 5},
		{"module-small", 5000, []string{"bucket_key", "module", "bucket_max_records", "100", "bucket_max_bytes", "64K"},
			limits{100, 64 << 10}, 5},
		{"traceId-nowindow", 150, []string{"bucket_key", "traceId", "bucket_window", "0", "flush_timeout", "2m"}, defaultLimits, 150},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			chunk := join(recs[:c.recs])
			path := writeFile(t, "chunk.msgpack", chunk)
			pm := e.props(append([]string{"stats", "cost", "count_by", "level"}, c.props...)...)
			e.init("a", pm)
			e.mustFlush("a", "app.log", path)
			e.resendInNewProcess("a", pm, "app.log", path) // must add nothing
			e.exit("a")
			docs := e.all("logs")
			entries := checkBuckets(t, docs, c.lim)
			sameEntries(t, entries, decodeFixture(t, chunk, parser.Options{}))
			checkSeqs(t, entries, c.recs)
			keys := map[string]bool{}
			field := c.props[1]
			for _, d := range docs {
				k := d.Lookup("key", field)
				keys[k.String()] = true
				for _, v := range mustValues(t, d.Lookup("logs")) {
					if got := v.Document().Lookup(field); !got.Equal(k) {
						t.Fatalf("bucket %v with key %s=%v holds an entry with %v", d.Lookup("_id"), field, k, got)
					}
				}
				if _, windowed := d.Lookup("start").TimeOK(); windowed == (c.name == "traceId-nowindow") {
					t.Errorf("bucket %v: start field present = %v", d.Lookup("_id"), windowed)
				}
			}
			if len(keys) != c.keys {
				t.Errorf("%d distinct keys, want %d", len(keys), c.keys)
			}
		})
	}
}

func mustValues(t *testing.T, v bson.RawValue) []bson.RawValue {
	t.Helper()
	vals, err := v.Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// checkFlat checks flat documents: one per record sent, each with a unique
// _id and the tag, and otherwise equal to the record's entry.
func checkFlat(t *testing.T, docs, want []bson.Raw, tag string) {
	t.Helper()
	ids := map[string]bool{}
	var entries []bson.Raw
	for _, d := range docs {
		id := d.Lookup("_id")
		if id.Type != bson.TypeObjectID {
			t.Fatalf("flat document _id %v is not an ObjectID", id)
		}
		if ids[string(id.Value)] {
			t.Errorf("_id %v stored twice", id)
		}
		ids[string(id.Value)] = true
		if got := d.Lookup("tag").StringValue(); got != tag {
			t.Errorf("tag %q, want %q", got, tag)
		}
		entries = append(entries, without(t, d, "_id", "tag"))
	}
	sameEntries(t, entries, want)
}

// without returns d without the named top-level fields.
func without(t *testing.T, d bson.Raw, names ...string) bson.Raw {
	t.Helper()
	elems, err := bsoncore.Document(d).Elements()
	if err != nil {
		t.Fatal(err)
	}
	b := bsoncore.NewDocumentBuilder()
outer:
	for _, el := range elems {
		for _, n := range names {
			if el.Key() == n {
				continue outer
			}
		}
		b.AppendValue(el.Key(), el.Value())
	}
	return bson.Raw(b.Build())
}
