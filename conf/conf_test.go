package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

const testURI = "mongodb://localhost:27017"

// noEnv and noFile make tests independent of the machine.
func noEnv(string) string { return "" }

func noFile(name string) ([]byte, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func parse(m Map) (*Config, error) { return Parse(m, noEnv, noFile) }

// with returns the minimal config (uri only) plus kv pairs.
func with(kv ...string) Map {
	m := Map{"uri": testURI}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	return m
}

// messages splits a Parse error into its messages.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

var messageFormat = regexp.MustCompile(`^[a-z_.]+: (invalid value ".*": \S.*|required.*|unknown key.*)$`)

func defaultConfig() *Config {
	return &Config{
		URI:                  testURI,
		URISource:            "uri",
		Database:             "fluentbit",
		Collection:           "logs",
		Mode:                 model.ModeBucket,
		BucketWindow:         time.Minute,
		BucketMaxRecords:     1000,
		BucketMaxBytes:       1 << 20,
		IDAction:             IDKeep,
		Idempotent:           true,
		MaxInflight:          4,
		WriteBatch:           100,
		FlushTimeout:         30 * time.Second,
		ConnectTimeout:       10 * time.Second,
		DeadLetterCollection: "logs_dead",
		Parser:               ParserNone,
		ParseKey:             "log",
		ParseTimeKey:         "time",
		KeyReplaceDot:        "_",
		KeyReplaceDollar:     "_",
		TagKey:               "tag",
		TimeKey:              "ts",
		Partition:            layout.None,
		TTLBurstLimit:        100000,
		TTLDeleteRate:        5000,
		DeadLetterTTL:        30 * 24 * time.Hour,
		CreateIndexes:        true,
		PluginLogLevel:       LogInfo,
		TargetMissing:        "unknown",
		TargetOverflow:       "other",
		TargetLimit:          1000,
		Targets:              staticTargets("fluentbit", "logs", "logs_dead"),
		LockDir:              filepath.Join(os.TempDir(), "out_mongodb-agents-"+strconv.Itoa(os.Geteuid())),
	}
}

// staticTargets are the templates of names without placeholders.
func staticTargets(db, coll, dl string) Targets {
	d, _ := naming.ParseDatabase(db)
	c, _ := naming.Parse(coll)
	l, _ := naming.Parse(dl)
	for _, t := range []*naming.Template{d, c, l} {
		t.Missing = "unknown"
	}
	return Targets{Database: d, Collection: c, DeadLetter: l}
}

func TestEmptyConfig(t *testing.T) {
	for _, g := range []Getter{nil, Map{}} {
		c, err := Parse(g, noEnv, noFile)
		msgs := messages(err)
		if c != nil || len(msgs) != 1 || !strings.HasPrefix(msgs[0], "uri: required") {
			t.Fatalf("Parse(empty) = %v, %q; want exactly one `uri: required` error", c, msgs)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, err := parse(with())
	if err != nil {
		t.Fatal(err)
	}
	if want := defaultConfig(); !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %s\nwant %s", c, want)
	}
}

// TestDocumentedDefaults writes each documented default explicitly: the
// result must equal the implicit default, so Keys() tells the truth.
func TestDocumentedDefaults(t *testing.T) {
	want := defaultConfig()
	for _, d := range Keys() {
		if d.Default == "" || strings.HasPrefix(d.Default, "<") {
			continue
		}
		c, err := parse(with(d.Key, d.Default))
		if err != nil {
			t.Errorf("%s=%q: %v", d.Key, d.Default, err)
			continue
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%s=%q differs from the implicit default:\n got %s\nwant %s", d.Key, d.Default, c, want)
		}
	}
	c, err := parse(with("dead_letter_collection", "logs_dead"))
	if err != nil || c.DeadLetterCollection != "logs_dead" {
		t.Errorf("explicit dead_letter_collection: %v, %v", c, err)
	}
}

// recorder remembers which keys Parse asked for.
type recorder struct {
	Map
	asked map[string]bool
}

func (r *recorder) Get(key string) string {
	r.asked[key] = true
	return r.Map.Get(key)
}

func TestKeysAreReadAndNotReserved(t *testing.T) {
	rec := &recorder{Map: with(), asked: map[string]bool{}}
	if _, err := Parse(rec, noEnv, noFile); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, d := range Keys() {
		if slices.Contains(documented, d.Key) {
			t.Errorf("key %s documented twice", d.Key)
		}
		documented = append(documented, d.Key)
		if !rec.asked[d.Key] {
			t.Errorf("key %s is documented but Parse never reads it", d.Key)
		}
		if Reserved(d.Key) {
			t.Errorf("key %s is reserved by Fluent Bit", d.Key)
		}
		if !regexp.MustCompile(`^[a-z][a-z_]*$`).MatchString(d.Key) {
			t.Errorf("key %q is not lower-case snake_case", d.Key)
		}
		if d.Meaning == "" {
			t.Errorf("key %s has no meaning", d.Key)
		}
	}
	for k := range rec.asked {
		if !slices.Contains(documented, k) {
			t.Errorf("Parse reads undocumented key %s", k)
		}
	}
	// Keys returns a copy.
	Keys()[0].Key = "changed"
	if Keys()[0].Key != "uri" {
		t.Error("Keys() exposes the table")
	}
}

func TestReserved(t *testing.T) {
	for _, k := range []string{"name", "Match", "match_regex", "alias", "host", "port", "tls", "tls.verify", "TLS.ca_file",
		"retry_limit", "workers", "log_level", "storage.total_limit_size", "net.keepalive"} {
		if !Reserved(k) {
			t.Errorf("Reserved(%q) = false", k)
		}
	}
	for _, k := range []string{"uri", "hostname", "tls_mode", "plugin_log_level", "storage"} {
		if Reserved(k) {
			t.Errorf("Reserved(%q) = true", k)
		}
	}
}

func TestValidValues(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		kv    []string
		field func(*Config) any
		want  any
	}{
		{[]string{"database", "app-logs_1"}, func(c *Config) any { return c.Database }, "app-logs_1"},
		{[]string{"database", strings.Repeat("d", 63)}, func(c *Config) any { return len(c.Database) }, 63},
		{[]string{"collection", "app.logs"}, func(c *Config) any { return c.DeadLetterCollection }, "app.logs_dead"},
		{[]string{"collection", strings.Repeat("c", 195)}, func(c *Config) any { return len(c.DeadLetterCollection) }, 200},
		{[]string{"mode", "flat"}, func(c *Config) any { return c.Mode }, model.ModeFlat},
		{[]string{"mode", "Bucket"}, func(c *Config) any { return c.Mode }, model.ModeBucket},
		{[]string{"bucket_key", " kubernetes.pod_name , host "}, func(c *Config) any { return c.BucketKey }, []string{"kubernetes.pod_name", "host"}},
		{[]string{"bucket_window", "0"}, func(c *Config) any { return c.BucketWindow }, time.Duration(0)},
		{[]string{"bucket_window", "1s"}, func(c *Config) any { return c.BucketWindow }, time.Second},
		{[]string{"bucket_window", "300"}, func(c *Config) any { return c.BucketWindow }, 5 * time.Minute},
		{[]string{"bucket_window", "1h"}, func(c *Config) any { return c.BucketWindow }, time.Hour},
		{[]string{"bucket_window", "24h"}, func(c *Config) any { return c.BucketWindow }, 24 * time.Hour},
		{[]string{"bucket_window", "1d"}, func(c *Config) any { return c.BucketWindow }, 24 * time.Hour},
		{[]string{"bucket_window", "1.5s"}, func(c *Config) any { return c.BucketWindow }, 1500 * time.Millisecond},
		{[]string{"bucket_max_records", "1"}, func(c *Config) any { return c.BucketMaxRecords }, 1},
		{[]string{"bucket_max_records", "100000"}, func(c *Config) any { return c.BucketMaxRecords }, 100000},
		{[]string{"bucket_max_bytes", "1K"}, func(c *Config) any { return c.BucketMaxBytes }, int64(1024)},
		{[]string{"bucket_max_bytes", "1.5M"}, func(c *Config) any { return c.BucketMaxBytes }, int64(1536 * 1024)},
		{[]string{"bucket_max_bytes", "15MiB"}, func(c *Config) any { return c.BucketMaxBytes }, int64(15 << 20)},
		{[]string{"bucket_max_bytes", "65536"}, func(c *Config) any { return c.BucketMaxBytes }, int64(65536)},
		{[]string{"stats", "latency,http.bytes"}, func(c *Config) any { return c.Stats }, []string{"latency", "http.bytes"}},
		{[]string{"count_by", "level"}, func(c *Config) any { return c.CountBy }, []string{"level"}},
		{[]string{"idempotent", "OFF"}, func(c *Config) any { return c.Idempotent }, false},
		{[]string{"idempotent", "yes"}, func(c *Config) any { return c.Idempotent }, true},
		{[]string{"max_inflight", "1"}, func(c *Config) any { return c.MaxInflight }, 1},
		{[]string{"max_inflight", "64"}, func(c *Config) any { return c.MaxInflight }, 64},
		{[]string{"write_batch", "1"}, func(c *Config) any { return c.WriteBatch }, 1},
		{[]string{"metrics_listen", ":2021"}, func(c *Config) any { return c.MetricsListen }, ":2021"},
		{[]string{"lock_dir", "/var/lib/fluent-bit/locks/"}, func(c *Config) any { return c.LockDir }, "/var/lib/fluent-bit/locks"},
		{[]string{"lock_dir", "$TMPDIR/agents"}, func(c *Config) any { return c.LockDir }, filepath.Join(os.TempDir(), "agents")},
		{[]string{"write_batch", "1000"}, func(c *Config) any { return c.WriteBatch }, 1000},
		{[]string{"shard_key", "None"}, func(c *Config) any { return c.ShardKey }, []ShardField(nil)},
		{[]string{"shard_key", "hashed_id"}, func(c *Config) any { return c.ShardKey }, []ShardField{{Name: "_id", Hashed: true}}},
		{[]string{"shard_key", "hashed_id", "mode", "flat"}, func(c *Config) any { return c.ShardKey }, []ShardField{{Name: "_id", Hashed: true}}},
		{[]string{"shard_key", "key_start"}, func(c *Config) any { return c.ShardKey }, []ShardField{{Name: "tag", Hashed: false}, {Name: "start", Hashed: false}}},
		{[]string{"shard_key", "key_start", "bucket_key", "host,k8s.pod", "bucket_window", "0"}, func(c *Config) any { return c.ShardKey },
			[]ShardField{{Name: "host", Hashed: false}, {Name: "k8s.pod", Hashed: false}}},
		{[]string{"shard_key", "host:hashed, start", "bucket_key", "host,module"}, func(c *Config) any { return c.ShardKey },
			[]ShardField{{Name: "host", Hashed: true}, {Name: "start", Hashed: false}}},
		{[]string{"flush_timeout", "1s"}, func(c *Config) any { return c.FlushTimeout }, time.Second},
		{[]string{"flush_timeout", "10m"}, func(c *Config) any { return c.FlushTimeout }, 10 * time.Minute},
		{[]string{"flush_timeout", "1m30s"}, func(c *Config) any { return c.FlushTimeout }, 90 * time.Second},
		{[]string{"connect_timeout", "5m"}, func(c *Config) any { return c.ConnectTimeout }, 5 * time.Minute},
		{[]string{"connect_timeout", "1000ms"}, func(c *Config) any { return c.ConnectTimeout }, time.Second},
		{[]string{"dead_letter_collection", "poison"}, func(c *Config) any { return c.DeadLetterCollection }, "poison"},
		{[]string{"write_concern", "majority"}, func(c *Config) any { return c.WriteConcern }, WriteConcern{Majority: true}},
		{[]string{"write_concern", "MAJORITY"}, func(c *Config) any { return c.WriteConcern.String() }, "majority"},
		{[]string{"write_concern", "1"}, func(c *Config) any { return c.WriteConcern }, WriteConcern{W: 1}},
		{[]string{"write_concern", "50"}, func(c *Config) any { return c.WriteConcern }, WriteConcern{W: 50}},
		{[]string{}, func(c *Config) any { return c.WriteConcern.IsDefault() }, true},
		{[]string{"write_journal", "on"}, func(c *Config) any { return c.WriteJournal }, &yes},
		{[]string{"write_journal", "false"}, func(c *Config) any { return c.WriteJournal }, &no},
		{[]string{"parser", "apache_common"}, func(c *Config) any { return c.Parser }, ParserApacheCommon},
		{[]string{"parser", "apache_combined"}, func(c *Config) any { return c.Parser }, ParserApacheCombined},
		{[]string{"parser", "apache_error"}, func(c *Config) any { return c.Parser }, ParserApacheError},
		{[]string{"parser", "nginx_access"}, func(c *Config) any { return c.Parser }, ParserNginxAccess},
		{[]string{"parser", "JSON"}, func(c *Config) any { return c.Parser }, ParserJSON},
		{[]string{"parser", "logfmt"}, func(c *Config) any { return c.Parser }, ParserLogfmt},
		{[]string{"parser", "regex", "parse_regex", `^(?P<level>\w+) (?P<msg>.*)$`}, func(c *Config) any { return c.ParseRegex }, `^(?P<level>\w+) (?P<msg>.*)$`},
		{[]string{"parse_key", "message"}, func(c *Config) any { return c.ParseKey }, "message"},
		{[]string{"parser", "json", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"time_from_log", "off"}, func(c *Config) any { return c.TimeFromLog }, false},
		{[]string{"parser", "logfmt", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "apache_combined", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "apache_common", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "apache_error", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "nginx_access", "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "regex", "parse_regex", `^(?P<time>\S+) (?P<msg>.*)$`, "time_from_log", "on"}, func(c *Config) any { return c.TimeFromLog }, true},
		{[]string{"parser", "json", "parse_time_key", "at"}, func(c *Config) any { return c.ParseTimeKey }, "at"},
		{[]string{"parser", "logfmt", "parse_time_key", "ts", "time_from_log", "on"}, func(c *Config) any { return c.ParseTimeKey }, "ts"},
		{[]string{"parser", "json", "parse_time_format", "%d/%b/%Y:%H:%M:%S %z"}, func(c *Config) any { return c.ParseTimeFormat }, "%d/%b/%Y:%H:%M:%S %z"},
		{[]string{"parser", "logfmt", "parse_time_format", "%Y-%m-%dT%H:%M:%S.%L%z"}, func(c *Config) any { return c.ParseTimeFormat }, "%Y-%m-%dT%H:%M:%S.%L%z"},
		{[]string{"types", "code:int, size:int,ok:bool,t:time,f:float,s:string"}, func(c *Config) any { return c.Types }, "code:int, size:int,ok:bool,t:time,f:float,s:string"},
		// One grammar with the decoder's: integer and any case are taken.
		{[]string{"types", "code:INT, size:integer,ok:Bool"}, func(c *Config) any { return c.Types }, "code:INT, size:integer,ok:Bool"},
		{[]string{"include_fields", "a,b.c"}, func(c *Config) any { return c.IncludeFields }, []string{"a", "b.c"}},
		{[]string{"exclude_fields", "b.c.d"}, func(c *Config) any { return c.ExcludeFields }, []string{"b.c.d"}},
		{[]string{"include_fields", "b", "exclude_fields", "b.secret"}, func(c *Config) any { return c.ExcludeFields }, []string{"b.secret"}},
		{[]string{"key_replace_dot", "__"}, func(c *Config) any { return c.KeyReplaceDot }, "__"},
		{[]string{"key_replace_dollar", "dollar_"}, func(c *Config) any { return c.KeyReplaceDollar }, "dollar_"},
		{[]string{"key_replace_dot", "a$"}, func(c *Config) any { return c.KeyReplaceDot }, "a$"},
		{[]string{"keep_metadata", "true"}, func(c *Config) any { return c.KeepMetadata }, true},
		{[]string{"tag_key", "_tag"}, func(c *Config) any { return c.TagKey }, "_tag"},
		{[]string{"time_key", "time"}, func(c *Config) any { return c.TimeKey }, "time"},
		{[]string{"ttl", "1m"}, func(c *Config) any { return c.TTL }, time.Minute},
		{[]string{"ttl", "7d"}, func(c *Config) any { return c.TTL }, 7 * 24 * time.Hour},
		{[]string{"ttl", "7d", "ttl_jitter", "1h"}, func(c *Config) any { return c.TTLJitter }, time.Hour},
		{[]string{"ttl", "1h", "ttl_jitter", "1h"}, func(c *Config) any { return c.TTLJitter }, time.Hour},
		{[]string{"ttl_jitter", "0"}, func(c *Config) any { return c.TTLJitter }, time.Duration(0)},
		{[]string{"partition", "day"}, func(c *Config) any { return c.Partition }, layout.Day},
		{[]string{"partition", "Week", "partition_keep", "4"}, func(c *Config) any { return c.Partition }, layout.Week},
		{[]string{"ttl", "7d", "bucket_key", "module,level", "ttl_rules", "module=audit:365d, level = debug : 1d,module=a:b:2h"},
			func(c *Config) any { return c.TTLRules },
			[]TTLRule{{"module", "audit", 365 * 24 * time.Hour}, {"level", "debug", 24 * time.Hour}, {"module", "a:b", 2 * time.Hour}}},
		{[]string{"ttl", "7d", "ttl_rules", "tag=app.audit:30d"}, func(c *Config) any { return c.TTLRules },
			[]TTLRule{{"tag", "app.audit", 30 * 24 * time.Hour}}},
		{[]string{"ttl", "1h", "mode", "flat", "ttl_rules", "status=500:1d"}, func(c *Config) any { return c.TTLRules },
			[]TTLRule{{"status", "500", 24 * time.Hour}}},
		{[]string{"dead_letter_ttl", "0"}, func(c *Config) any { return c.DeadLetterTTL }, time.Duration(0)},
		{[]string{"mode", "flat", "capped_size", "1M", "capped_max", "5000"}, func(c *Config) any { return c.CappedMax }, int64(5000)},
		{[]string{"compression", "ZSTD"}, func(c *Config) any { return c.Compression }, "zstd"},
		{[]string{"validate", "on"}, func(c *Config) any { return c.Validate }, true},
		{[]string{"keep_values", "traceId, http.host"}, func(c *Config) any { return c.KeepValues }, []string{"traceId", "http.host"}},
		{[]string{"indexes", "values.traceId, start:-1, key.module+logs.level:1"}, func(c *Config) any { return c.Indexes },
			[]Index{{{Path: "values.traceId", Order: 1}}, {{Path: "start", Order: -1}}, {{Path: "key.module", Order: 1}, {Path: "logs.level", Order: 1}}}},
		{[]string{"partition", "Month", "partition_keep", "12"}, func(c *Config) any { return c.PartitionKeep }, 12},
		{[]string{"partition_keep", "0"}, func(c *Config) any { return c.PartitionKeep }, 0},
		{[]string{"capped_size", "4K", "mode", "flat"}, func(c *Config) any { return c.CappedSize }, int64(4096)},
		{[]string{"capped_size", "1G", "mode", "flat"}, func(c *Config) any { return c.CappedSize }, int64(1 << 30)},
		{[]string{"capped_size", "0", "ttl", "1h"}, func(c *Config) any { return c.CappedSize }, int64(0)},
		{[]string{"create_indexes", "no"}, func(c *Config) any { return c.CreateIndexes }, false},
		{[]string{"plugin_log_level", "debug"}, func(c *Config) any { return c.PluginLogLevel }, LogDebug},
		{[]string{"plugin_log_level", "Error"}, func(c *Config) any { return c.PluginLogLevel }, LogError},
		{[]string{"plugin_log_level", "warn"}, func(c *Config) any { return c.PluginLogLevel }, LogWarn},
		{[]string{"instance_name", "mongo.audit-1"}, func(c *Config) any { return c.InstanceName }, "mongo.audit-1"},
		{[]string{"mode", "flat", "ttl", "1h", "partition", "day"}, func(c *Config) any { return c.Mode }, model.ModeFlat},
		{[]string{"uri", "mongodb+srv://user:p%40ss@cluster0.example.net/?retryWrites=true&w=majority"}, func(c *Config) any { return c.URISource }, "uri"},
	}
	for _, tt := range tests {
		c, err := parse(with(tt.kv...))
		if err != nil {
			t.Errorf("%q: %v", tt.kv, err)
			continue
		}
		if got := tt.field(c); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %#v, want %#v", tt.kv, got, tt.want)
		}
	}
}

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		kv   []string
		want string // the only message
	}{
		// uri and its sources
		{[]string{"uri", "localhost:27017"}, `uri: invalid value "localhost:27017": must start with mongodb:// or mongodb+srv://`},
		{[]string{"uri", "mongodb://"}, `uri: invalid value "mongodb://": has no host`},
		{[]string{"uri", "mongodb:///db"}, `uri: invalid value "mongodb:///db": has no host`},
		{[]string{"uri", "mongodb://u:pw@"}, `uri: invalid value "mongodb://u:xxxxx@": has no host`},
		{[]string{"uri", "mongodb://h:0"}, `uri: invalid value "mongodb://h:0": the host has an invalid port (must be 1-65535)`},
		{[]string{"uri", "mongodb://a,b:99999"}, `uri: invalid value "mongodb://a,b:99999": host 2 of 2 has an invalid port (must be 1-65535)`},
		{[]string{"uri", "mongodb://a,,b"}, `uri: invalid value "mongodb://a,,b": host 2 of 3 is empty`},
		{[]string{"uri", "mongodb+srv://a.example.com:27017"}, `uri: invalid value "mongodb+srv://a.example.com:27017": the host has a port, which mongodb+srv:// does not allow (the port comes from DNS)`},
		{[]string{"uri", "mongodb+srv://a.example.com,b.example.com"}, `uri: invalid value "mongodb+srv://a.example.com,b.example.com": mongodb+srv:// takes exactly one host name`},
		{[]string{"uri", "mongodb://::1"}, `uri: invalid value "mongodb://::1": the host has more than one ':' (write IPv6 addresses in brackets: [::1]:27017)`},
		{[]string{"uri", "mongodb://h?w=%zz"}, `uri: invalid value "mongodb://h?w=%zz": has malformed options after '?' (name=value pairs joined by &, percent-encoded)`},
		{[]string{"uri", "mongodb://u:p:w@h"}, `uri: invalid value "mongodb://u:xxxxx@h": has unescaped special characters in the user name or password; percent-encode the user name and password (@ : / ? # [ ] % become %XX)`},
		{[]string{"uri", "mongodb://u:p%zz@h"}, `uri: invalid value "mongodb://u:xxxxx@h": has a malformed percent-escape in the password; percent-encode the user name and password (@ : / ? # [ ] % become %XX)`},
		{[]string{"uri", "mongodb://:pw@h"}, `uri: invalid value "mongodb://:xxxxx@h": has an empty user name; percent-encode the user name and password (@ : / ? # [ ] % become %XX)`},
		{[]string{"uri", "mongodb://%2Ftmp%2Fx"}, `uri: invalid value "mongodb://%2Ftmp%2Fx": the host is percent-encoded but is not a Unix socket path ending in .sock`},
		{[]string{"uri", "mongodb://h /db"}, `uri: invalid value "mongodb://h /db": must not contain spaces or control characters (percent-encode them)`},
		{[]string{"uri", testURI, "uri_env", "MONGO_URI"}, `uri_env: invalid value "MONGO_URI": conflicts with uri; give exactly one of uri, uri_file or uri_env`},
		{[]string{"uri", "", "uri_env", "1BAD"}, `uri_env: invalid value "1BAD": not an environment variable name (letters, digits and _, not starting with a digit)`},
		// names
		{[]string{"database", "my.db"}, `database: invalid value "my.db": must not contain / \ . space " $ or NUL`},
		{[]string{"database", "a b"}, `database: invalid value "a b": must not contain / \ . space " $ or NUL`},
		{[]string{"database", "a$"}, `database: invalid value "a$": template: $ without TAG or a field name at column 2: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $`},
		{[]string{"database", "logs.$TAG"}, `database: invalid value "logs.$TAG": template: "." at column 5: a database name cannot contain / \ . space " $ or NUL`},
		{[]string{"database", "a/b"}, `database: invalid value "a/b": must not contain / \ . space " $ or NUL`},
		{[]string{"database", "a\x00"}, `database: invalid value "a\x00": must not contain / \ . space " $ or NUL`},
		{[]string{"database", strings.Repeat("d", 64)}, `database: invalid value "` + strings.Repeat("d", 64) + `": must be shorter than 64 bytes`},
		{[]string{"database", "admin"}, `database: invalid value "admin": is one of MongoDB's own databases (admin, local and config are reserved): choose another name`},
		{[]string{"database", "local"}, `database: invalid value "local": is one of MongoDB's own databases (admin, local and config are reserved): choose another name`},
		{[]string{"database", "Config"}, `database: invalid value "Config": is one of MongoDB's own databases (admin, local and config are reserved): choose another name`},
		{[]string{"database", "$TAG", "target_overflow", "ADMIN"}, `target_overflow: invalid value "ADMIN": makes the overflow target's database admin (database $TAG), one of MongoDB's own (admin, local and config are reserved): choose another value`},
		{[]string{"database", "loc$db", "target_overflow", "al"}, `target_overflow: invalid value "al": makes the overflow target's database local (database loc$db), one of MongoDB's own (admin, local and config are reserved): choose another value`},
		{[]string{"collection", "system.logs", "dead_letter_collection", "x"}, `collection: invalid value "system.logs": must not start with system. (reserved by MongoDB)`},
		{[]string{"collection", "a$", "dead_letter_collection", "x"}, `collection: invalid value "a$": template: $ without TAG or a field name at column 2: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $`},
		{[]string{"collection", "k8s_$a['b"}, `collection: invalid value "k8s_$a['b": template: unclosed quote at column 8`},
		{[]string{"dead_letter_collection", "dead_$TAG[x]"}, `dead_letter_collection: invalid value "dead_$TAG[x]": template: tag part "x" at column 11: $TAG[N] takes a number N from 0 to 999`},
		{[]string{"collection", "k_$ns", "dead_letter_collection", "dead_$['ns']_$pod"}, `dead_letter_collection: invalid value "dead_$['ns']_$pod": reads the field $['pod'], which neither database nor collection reads: a dead-letter collection may name only fields of its record's target, so that target_limit bounds it too`},
		{[]string{"target_missing", "a.b"}, `target_missing: invalid value "a.b": must hold only letters, digits, _ and - (it becomes part of a database or collection name)`},
		{[]string{"target_overflow", strings.Repeat("o", 65)}, `target_overflow: invalid value "` + strings.Repeat("o", 65) + `": must be at most 64 bytes`},
		{[]string{"target_limit", "0"}, `target_limit: invalid value "0": must be a whole number between 1 and 100000`},
		{[]string{"target_limit", "50"}, `target_limit: invalid value "50": needs a template in database, collection or dead_letter_collection (all three are fixed names, so there is one target)`},
		{[]string{"collection", "k8s", "target_missing", "none"}, `target_missing: invalid value "none": needs a template in database, collection or dead_letter_collection (all three are fixed names, so there is one target)`},
		{[]string{"database", "d", "target_overflow", "rest"}, `target_overflow: invalid value "rest": needs a template in database, collection or dead_letter_collection (all three are fixed names, so there is one target)`},
		{[]string{"collection", strings.Repeat("c", 201)}, `collection: invalid value "` + strings.Repeat("c", 201) + `": must be at most 200 bytes`},
		{[]string{"collection", strings.Repeat("c", 196)}, `dead_letter_collection: invalid value "` + strings.Repeat("c", 196) + `_dead": must be at most 200 bytes (this default is derived from collection; set dead_letter_collection)`},
		{[]string{"collection", strings.Repeat("c", 192), "partition", "day", "dead_letter_collection", "x"}, `collection: invalid value "` + strings.Repeat("c", 192) + `": too long for partition day: <collection>_YYYYMMDD must be at most 200 bytes`},
		{[]string{"database", strings.Repeat("d", 60), "collection", strings.Repeat("c", 195)}, `collection: invalid value "` + strings.Repeat("c", 195) + `": <database>.<collection> (with any partition suffix) must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)`},
		{[]string{"database", strings.Repeat("d", 60), "collection", strings.Repeat("c", 180)}, `collection: invalid value "` + strings.Repeat("c", 180) + `": <database>.<collection> (with any partition suffix) must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)`},
		// mode and buckets
		{[]string{"mode", "buckets"}, `mode: invalid value "buckets": must be one of bucket, flat`},
		{[]string{"bucket_key", "a,,b"}, `bucket_key: invalid value "a,,b": empty item in the comma-separated list`},
		{[]string{"bucket_key", "a,"}, `bucket_key: invalid value "a,": empty item in the comma-separated list`},
		{[]string{"bucket_key", "a..b"}, `bucket_key: invalid value "a..b": "a..b" has an empty path segment (write a.b, not a..b, .a or a.)`},
		{[]string{"bucket_key", ".a"}, `bucket_key: invalid value ".a": ".a" has an empty path segment (write a.b, not a..b, .a or a.)`},
		{[]string{"bucket_key", "a,a"}, `bucket_key: invalid value "a,a": "a" is listed twice`},
		{[]string{"bucket_window", "7s"}, `bucket_window: invalid value "7s": must divide 24h evenly so that windows align with UTC days (e.g. 10s, 30s, 1m, 5m, 15m, 1h, 6h, 24h)`},
		{[]string{"bucket_window", "500ms"}, `bucket_window: invalid value "500ms": must be 0 (no window) or between 1s and 24h`},
		{[]string{"bucket_window", "2d"}, `bucket_window: invalid value "2d": must be 0 (no window) or between 1s and 24h`},
		{[]string{"bucket_window", "1M"}, `bucket_window: invalid value "1M": unknown unit "M"; ` + durationSyntax},
		{[]string{"bucket_window", "1 m"}, `bucket_window: invalid value "1 m": unknown unit " m"; ` + durationSyntax},
		{[]string{"bucket_window", "-1s"}, `bucket_window: invalid value "-1s": ` + durationSyntax},
		{[]string{"bucket_window", "1min"}, `bucket_window: invalid value "1min": unknown unit "min"; ` + durationSyntax},
		{[]string{"bucket_window", "m"}, `bucket_window: invalid value "m": ` + durationSyntax},
		{[]string{"bucket_window", "10us"}, `bucket_window: invalid value "10us": unknown unit "us"; ` + durationSyntax},
		{[]string{"bucket_max_records", "0"}, `bucket_max_records: invalid value "0": must be a whole number between 1 and 100000`},
		{[]string{"bucket_max_records", "100001"}, `bucket_max_records: invalid value "100001": must be a whole number between 1 and 100000`},
		{[]string{"bucket_max_records", "1e3"}, `bucket_max_records: invalid value "1e3": must be a whole number between 1 and 100000`},
		{[]string{"bucket_max_records", "-5"}, `bucket_max_records: invalid value "-5": must be a whole number between 1 and 100000`},
		{[]string{"bucket_max_bytes", "16M"}, `bucket_max_bytes: invalid value "16M": must be between 1K and 15M (MongoDB documents are limited to 16M)`},
		{[]string{"bucket_max_bytes", "1023"}, `bucket_max_bytes: invalid value "1023": must be between 1K and 15M (MongoDB documents are limited to 16M)`},
		{[]string{"bucket_max_bytes", "1X"}, `bucket_max_bytes: invalid value "1X": unknown unit "X"; ` + sizeSyntax},
		{[]string{"bucket_max_bytes", "1.5"}, `bucket_max_bytes: invalid value "1.5": not a whole number of bytes`},
		{[]string{"stats", "a, ,b"}, `stats: invalid value "a, ,b": empty item in the comma-separated list`},
		{[]string{"count_by", "a."}, `count_by: invalid value "a.": "a." has an empty path segment (write a.b, not a..b, .a or a.)`},
		// delivery
		{[]string{"idempotent", "enabled"}, `idempotent: invalid value "enabled": use on/off, true/false, yes/no or 1/0`},
		{[]string{"max_inflight", "0"}, `max_inflight: invalid value "0": must be a whole number between 1 and 64`},
		{[]string{"max_inflight", "65"}, `max_inflight: invalid value "65": must be a whole number between 1 and 64`},
		{[]string{"lock_dir", "locks"}, `lock_dir: invalid value "locks": must be an absolute path (the agent's slot lock files go there; a relative one would depend on Fluent Bit's working directory)`},
		{[]string{"lock_dir", "$TMPDIRX/locks"}, `lock_dir: invalid value "$TMPDIRX/locks": must be an absolute path (the agent's slot lock files go there; a relative one would depend on Fluent Bit's working directory)`},
		{[]string{"metrics_listen", "2021"}, `metrics_listen: invalid value "2021": must be host:port with a port from 1 to 65535, e.g. 127.0.0.1:2021`},
		{[]string{"metrics_listen", "localhost:http"}, `metrics_listen: invalid value "localhost:http": must be host:port with a port from 1 to 65535, e.g. 127.0.0.1:2021`},
		{[]string{"write_batch", "0"}, `write_batch: invalid value "0": must be a whole number between 1 and 1000`},
		{[]string{"shard_key", "key_start", "mode", "flat"}, `shard_key: invalid value "key_start": mode flat shards only on a hashed _id (its _id grows with time and would make one shard hot): use none or hashed_id`},
		{[]string{"shard_key", "host", "bucket_key", "module"}, `shard_key: invalid value "host": "host" is not _id, start or a bucket_key field (module): the update filter names only those; allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields`},
		{[]string{"shard_key", "start", "bucket_window", "0"}, `shard_key: invalid value "start": start needs a bucket_window (bucket_window is 0: buckets have no start); allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields`},
		{[]string{"shard_key", "tag:hashed,_id:hashed"}, `shard_key: invalid value "tag:hashed,_id:hashed": at most one field can be hashed; allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields`},
		{[]string{"shard_key", "start:hashed,tag"}, `shard_key: invalid value "start:hashed,tag": a key that starts with start sends every new write to the shard holding the newest windows; put a key field (or _id) first; allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields`},
		{[]string{"shard_key", "tag:range"}, `shard_key: invalid value "tag:range": "tag:range": the only suffix is :hashed; allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields`},
		{[]string{"flush_timeout", "500ms"}, `flush_timeout: invalid value "500ms": must be between 1s and 10m`},
		{[]string{"flush_timeout", "11m"}, `flush_timeout: invalid value "11m": must be between 1s and 10m`},
		{[]string{"connect_timeout", "0"}, `connect_timeout: invalid value "0": must be between 1s and 5m`},
		{[]string{"connect_timeout", "6m"}, `connect_timeout: invalid value "6m": must be between 1s and 5m`},
		{[]string{"dead_letter_collection", "off"}, `dead_letter_collection: invalid value "off": cannot be disabled: records MongoDB rejects must be kept somewhere; give a collection name`},
		{[]string{"dead_letter_collection", "None"}, `dead_letter_collection: invalid value "None": cannot be disabled: records MongoDB rejects must be kept somewhere; give a collection name`},
		{[]string{"dead_letter_collection", "system.dead"}, `dead_letter_collection: invalid value "system.dead": must not start with system. (reserved by MongoDB)`},
		{[]string{"dead_letter_collection", "logs"}, `dead_letter_collection: invalid value "logs": must differ from collection`},
		{[]string{"partition", "day", "dead_letter_collection", "logs_20240101"}, `dead_letter_collection: invalid value "logs_20240101": looks like a partition of collection and could be dropped with it; choose another name`},
		{[]string{"write_concern", "0"}, `write_concern: invalid value "0": unacknowledged writes cannot guarantee delivery (the plugin acknowledges a chunk only after MongoDB confirms the write); use majority or 1-50`},
		{[]string{"write_concern", "51"}, `write_concern: invalid value "51": must be majority or a number of members 1-50 (tag sets are not supported)`},
		{[]string{"write_concern", "all"}, `write_concern: invalid value "all": must be majority or a number of members 1-50 (tag sets are not supported)`},
		{[]string{"write_journal", "maybe"}, `write_journal: invalid value "maybe": use on/off, true/false, yes/no or 1/0`},
		// parsing
		{[]string{"parser", "apache"}, `parser: invalid value "apache": must be one of none, apache_common, apache_combined, apache_error, nginx_access, json, logfmt, regex`},
		{[]string{"parser", "regex"}, `parse_regex: required with parser regex: a Go regular expression with named groups, e.g. ^(?P<level>\w+) (?P<msg>.*)$`},
		{[]string{"parser", "regex", "parse_regex", "(?P<a>x"}, "parse_regex: invalid value \"(?P<a>x\": does not compile: missing closing ): `(?P<a>x`"},
		{[]string{"parser", "regex", "parse_regex", `(\w+) (.*)`}, `parse_regex: invalid value "(\\w+) (.*)": has no named group; name the fields with (?P<name>...)`},
		{[]string{"parser", "regex", "parse_regex", `(?P<a>\w+) (?P<a>.*)`}, `parse_regex: invalid value "(?P<a>\\w+) (?P<a>.*)": names the group "a" twice`},
		{[]string{"parser", "json", "parse_regex", `(?P<a>x)`}, `parse_regex: invalid value "(?P<a>x)": only used with parser regex (parser is json)`},
		{[]string{"parse_regex", `(?P<a>x)`}, `parse_regex: invalid value "(?P<a>x)": only used with parser regex (parser is none)`},
		{[]string{"time_from_log", "on"}, `time_from_log: invalid value "on": needs a parser that gives the line's time (parser is none): apache_common, apache_combined, apache_error, nginx_access, json and logfmt (the time under parse_time_key), or regex with a group named time`},
		{[]string{"parser", "none", "time_from_log", "on"}, `time_from_log: invalid value "on": needs a parser that gives the line's time (parser is none): apache_common, apache_combined, apache_error, nginx_access, json and logfmt (the time under parse_time_key), or regex with a group named time`},
		{[]string{"parser", "regex", "parse_regex", `^(?P<at>\S+) (?P<msg>.*)$`, "time_from_log", "on"}, `time_from_log: invalid value "on": parser regex gives no time here: parse_regex has no group named time; name the group holding the line's time (?P<time>...), or use apache_common, apache_combined, apache_error, nginx_access, json and logfmt (the time under parse_time_key), or regex with a group named time`},
		{[]string{"parser", "json", "parse_time_format", "%Y-%m-%d %Q"}, `parse_time_format: invalid value "%Y-%m-%d %Q": unknown directive %Q; allowed: %Y %y %m %b %B %d %e %j %H %M %S %L (fraction of a second) %z %Z %a %A %s %T (%H:%M:%S) %F (%Y-%m-%d) %%, and literal text`},
		{[]string{"parser", "logfmt", "parse_time_format", "%b %d %H:%M:%S"}, `parse_time_format: invalid value "%b %d %H:%M:%S": gives no date: use %s, or a year (%Y or %y) with %m or %b and %d or %e, or with %j`},
		{[]string{"parser", "json", "parse_time_format", "%Y-%m-%d %"}, `parse_time_format: invalid value "%Y-%m-%d %": ends with a lone %; directives allowed: %Y %y %m %b %B %d %e %j %H %M %S %L (fraction of a second) %z %Z %a %A %s %T (%H:%M:%S) %F (%Y-%m-%d) %%, and literal text`},
		{[]string{"parser", "apache_combined", "parse_time_key", "ts"}, `parse_time_key: invalid value "ts": only used with parser json or logfmt (parser is apache_combined): regex reads the time from its group named time, the other parsers from their own time field`},
		{[]string{"parse_time_format", "%s"}, `parse_time_format: invalid value "%s": only used with parser json or logfmt (parser is none): regex reads the time from its group named time, the other parsers from their own time field`},
		{[]string{"parser", "regex", "parse_regex", `^(?P<time>\S+)$`, "parse_time_format", "%s"}, `parse_time_format: invalid value "%s": only used with parser json or logfmt (parser is regex): regex reads the time from its group named time, the other parsers from their own time field`},
		{[]string{"parser", "json", "parse_time_key", "a\x00b"}, `parse_time_key: invalid value "a\x00b": must not contain NUL`},
		{[]string{"time_from_log", "si"}, `time_from_log: invalid value "si": use on/off, true/false, yes/no or 1/0`},
		{[]string{"types", "code"}, `types: invalid value "code": "code" is not field:kind`},
		{[]string{"types", "code:integr"}, `types: invalid value "code:integr": "code:integr": kind must be one of int (or integer), float, bool, time, string, in any case`},
		{[]string{"types", ":int"}, `types: invalid value ":int": ":int": field has an empty path segment (write a.b, not a..b, .a or a.)`},
		{[]string{"types", "a:int,a:float"}, `types: invalid value "a:int,a:float": field "a" is given twice`},
		{[]string{"types", "a:int,"}, `types: invalid value "a:int,": empty item in the comma-separated list`},
		// fields
		{[]string{"include_fields", "a,b", "exclude_fields", "b"}, `exclude_fields: invalid value "b": "b" is also in include_fields`},
		{[]string{"exclude_fields", "a,,b"}, `exclude_fields: invalid value "a,,b": empty item in the comma-separated list`},
		{[]string{"key_replace_dot", "-.-"}, `key_replace_dot: invalid value "-.-": must not contain '.'`},
		{[]string{"key_replace_dot", "$"}, `key_replace_dot: invalid value "$": must not start with '$'`},
		{[]string{"key_replace_dollar", "$x"}, `key_replace_dollar: invalid value "$x": must not start with '$'`},
		{[]string{"key_replace_dollar", "."}, `key_replace_dollar: invalid value ".": must not contain '.'`},
		{[]string{"keep_metadata", "2"}, `keep_metadata: invalid value "2": use on/off, true/false, yes/no or 1/0`},
		{[]string{"tag_key", "fluent.tag"}, `tag_key: invalid value "fluent.tag": must not contain '.'`},
		{[]string{"tag_key", "$tag"}, `tag_key: invalid value "$tag": must not start with '$'`},
		{[]string{"time_key", "_id"}, `time_key: invalid value "_id": _id is the document id`},
		{[]string{"time_key", "tag"}, `time_key: invalid value "tag": must differ from tag_key`},
		// retention
		{[]string{"ttl", "30s"}, `ttl: invalid value "30s": must be 0 (off) or between 1m and 2147483647s (MongoDB's TTL limit)`},
		{[]string{"ttl", "100000d"}, `ttl: invalid value "100000d": must be 0 (off) or between 1m and 2147483647s (MongoDB's TTL limit)`},
		{[]string{"ttl", "forever"}, `ttl: invalid value "forever": ` + durationSyntax},
		{[]string{"ttl_jitter", "5m"}, `ttl_jitter: invalid value "5m": needs ttl (ttl is 0, off)`},
		{[]string{"ttl", "1h", "ttl_jitter", "2h"}, `ttl_jitter: invalid value "2h": must not exceed ttl (1h)`},
		{[]string{"partition", "year"}, `partition: invalid value "year": must be one of none, day, week, month`},
		{[]string{"partition_keep", "7"}, `partition_keep: invalid value "7": needs partition day, week or month (partition is none)`},
		{[]string{"bucket_key", "module", "ttl_rules", "module=audit:365d"}, `ttl_rules: invalid value "module=audit:365d": needs ttl (ttl is 0, off): rules shift expiry relative to ttl's TTL index`},
		{[]string{"ttl", "7d", "bucket_key", "module", "ttl_rules", "module=audit:365d, level=debug:1d, module:1d, host=a:1s, host=b:forever"},
			`ttl_rules: invalid value "module=audit:365d, level=debug:1d, module:1d, host=a:1s, host=b:forever": "level" is not a bucket_key field (module): a bucket's rule can only read its key; "module:1d": not field=value:duration; "host=a:1s": duration must be between 1m and 2147483647s; "host=b:forever": a duration is a number with a unit ms, s, m, h or d (e.g. 500ms, 30s, 1m, 1h, 7d; 1h30m also works); a plain integer means seconds`},
		{[]string{"ttl", "7d", "mode", "flat", "ttl_rules", "a.b=x:1d"}, `ttl_rules: invalid value "a.b=x:1d": "a.b" is not a top-level field name`},
		{[]string{"capped_max", "10"}, `capped_max: invalid value "10": needs capped_size (MongoDB caps a collection by size first)`},
		{[]string{"indexes", "start:2"}, `indexes: invalid value "start:2": "start:2": the order is 1 or -1`},
		{[]string{"mode", "flat", "keep_values", "a"}, `keep_values: invalid value "a": mode flat has no buckets; remove keep_values or set mode bucket`},
		{[]string{"compression", "lz4"}, `compression: invalid value "lz4": must be one of zstd, snappy, zlib, none`},
		{[]string{"dead_letter_ttl", "10s"}, `dead_letter_ttl: invalid value "10s": must be 0 (keep parked records) or between 1m and 2147483647s (MongoDB's TTL limit)`},
		{[]string{"ttl_delete_rate", "0"}, `ttl_delete_rate: invalid value "0": must be a whole number between 1 and 1000000`},
		{[]string{"partition", "day", "partition_keep", "-1"}, `partition_keep: invalid value "-1": must be a whole number between 0 and 2147483647`},
		{[]string{"capped_size", "1K"}, `capped_size: invalid value "1K": must be 0 (not capped) or at least 4K`},
		{[]string{"capped_size", "1G", "ttl", "7d", "mode", "flat"}, `capped_size: invalid value "1G": cannot be combined with ttl (capped collections cannot have TTL indexes)`},
		{[]string{"capped_size", "1G", "partition", "day", "mode", "flat"}, `capped_size: invalid value "1G": cannot be combined with partition day (partition collections are not capped)`},
		{[]string{"capped_size", "1G"}, `capped_size: invalid value "1G": needs mode flat (documents in a capped collection cannot grow, and buckets grow)`},
		{[]string{"create_indexes", "auto"}, `create_indexes: invalid value "auto": use on/off, true/false, yes/no or 1/0`},
		// logging
		{[]string{"plugin_log_level", "trace"}, `plugin_log_level: invalid value "trace": must be one of error, warn, info, debug`},
		{[]string{"plugin_log_level", "warning"}, `plugin_log_level: invalid value "warning": must be one of error, warn, info, debug`},
		{[]string{"instance_name", "my mongo"}, `instance_name: invalid value "my mongo": must not contain spaces, control characters or ']' (it is printed inside [...] log prefixes)`},
		{[]string{"instance_name", "a]b"}, `instance_name: invalid value "a]b": must not contain spaces, control characters or ']' (it is printed inside [...] log prefixes)`},
		// unknown keys (Map lists its keys)
		{[]string{"bucket_windw", "1m"}, `bucket_windw: unknown key; did you mean bucket_window?`},
		{[]string{"url", testURI}, `url: unknown key; did you mean uri?`},
		{[]string{"frobnicate", "1"}, `frobnicate: unknown key`},
	}
	for _, tt := range tests {
		c, err := parse(with(tt.kv...))
		msgs := messages(err)
		if c != nil || len(msgs) != 1 || msgs[0] != tt.want {
			t.Errorf("%q:\n got %q\nwant [%q]", tt.kv, msgs, tt.want)
		}
		for _, m := range msgs {
			if !messageFormat.MatchString(m) {
				t.Errorf("%q: message %q does not follow `<key>: invalid value \"<v>\": <why>`", tt.kv, m)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%q: not an *Error", tt.kv)
			}
		}
	}
}

// TestFlatModeRejectsBucketKeys: every bucket key, even set to its default,
// is an error in flat mode, and the message names both keys.
func TestFlatModeRejectsBucketKeys(t *testing.T) {
	for _, kv := range [][2]string{
		{"bucket_key", "host"}, {"bucket_window", "1m"}, {"bucket_max_records", "1000"},
		{"bucket_max_bytes", "1M"}, {"stats", "latency"}, {"count_by", "level"},
	} {
		_, err := parse(with("mode", "flat", kv[0], kv[1]))
		want := kv[0] + `: invalid value "` + kv[1] + `": mode flat has no buckets; remove ` + kv[0] + ` or set mode bucket`
		if msgs := messages(err); len(msgs) != 1 || msgs[0] != want {
			t.Errorf("%v: got %q, want %q", kv, msgs, want)
		}
	}
}

func TestAllErrorsReportedTogether(t *testing.T) {
	_, err := parse(with("max_inflight", "0", "ttl", "soon", "mode", "tree"))
	msgs := messages(err)
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3: %q", len(msgs), msgs)
	}
	for i, k := range []string{"mode:", "max_inflight:", "ttl:"} {
		if !strings.HasPrefix(msgs[i], k) {
			t.Errorf("message %d = %q, want prefix %q", i, msgs[i], k)
		}
	}
	if strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("err.Error() should hold one message per line: %q", err.Error())
	}

	// Many at once, including the missing uri.
	m := Map{"database": "a.b", "collection": "$", "bucket_window": "7s", "write_concern": "0", "parser": "regex"}
	_, err = Parse(m, noEnv, noFile)
	if got := len(messages(err)); got != 6 {
		t.Errorf("got %d messages, want 6: %q", got, messages(err))
	}
}

const secret = "s3cr3t-P4ss"

func TestPasswordNeverShown(t *testing.T) {
	bad := []string{
		"mongodb://admin:" + secret + "@",
		"mongodb://admin:" + secret + "@h:notaport",
		"mongodb://admin:" + secret + "@h1,,h2",
		"mongodb://admin:" + secret + "/x@h",  // unescaped '/' in the password
		"mongodb://admin:" + secret + "?x@h",  // unescaped '?'
		"mongodb://admin:" + secret + "@@h",   // unescaped '@'
		"mongodb://admin:" + secret + ":x@h",  // unescaped ':'
		"mongodb://admin:" + secret + "%zz@h", // bad escape
		"mongodb://admin:" + secret + "@h /db",
		"mongodb+srv://admin:" + secret + "@a:1",
		"mongodb://admin@h/?tlsCertificateKeyFilePassword=" + secret + "&w=%zz",
		"mongodb://admin@h/?authMechanismProperties=AWS_SESSION_TOKEN:" + secret + "&w=%zz",
		"admin:" + secret + "@h:27017",
		"http://admin:" + secret + "@h",
		"mongodb://admin@" + secret + "@h:27017/", // ':' typed as '@'
	}
	for _, uri := range bad {
		sources := []struct {
			m    Map
			env  func(string) string
			file func(string) ([]byte, error)
		}{
			{Map{"uri": uri}, noEnv, noFile},
			{Map{"uri_env": "MONGO_URI"}, func(string) string { return uri }, noFile},
			{Map{"uri_file": "/run/secrets/uri"}, noEnv, func(string) ([]byte, error) { return []byte(uri + "\n"), nil }},
			// a URI put in the wrong key
			{Map{"uri_env": uri}, noEnv, noFile},
			{Map{"uri_file": uri}, noEnv, noFile},
			{Map{"uri": testURI, "uri_file": uri}, noEnv, noFile},
			{Map{"uri": uri, "database": uri}, noEnv, noFile},
		}
		for i, s := range sources {
			c, err := Parse(s.m, s.env, s.file)
			if err == nil {
				t.Errorf("%q source %d: accepted", uri, i)
				continue
			}
			if c != nil {
				t.Errorf("%q source %d: config returned with an error", uri, i)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%q source %d: password in error: %v", uri, i, err)
			}
		}
		if r := RedactURI(uri); strings.Contains(r, secret) {
			t.Errorf("RedactURI(%q) = %q", uri, r)
		}
	}

	// Valid URIs: String and Redacted hide the password; URI keeps it.
	for _, uri := range []string{
		"mongodb://admin:" + secret + "@h1:27017,h2:27018/admin?replicaSet=rs0",
		"mongodb+srv://admin:" + secret + "@cluster0.example.net/?retryWrites=true",
		"mongodb://admin:" + strings.ReplaceAll(secret, "-", "%2D") + "@h",
		"mongodb://admin@h/?authMechanism=MONGODB-X509&tlsCertificateKeyFilePassword=" + secret,
	} {
		c, err := parse(Map{"uri": uri})
		if err != nil {
			t.Errorf("%q: %v", uri, err)
			continue
		}
		if c.URI != uri {
			t.Errorf("URI = %q, want %q", c.URI, uri)
		}
		for _, s := range []string{c.String(), c.Redacted(), RedactURI(uri)} {
			if strings.Contains(s, "s3cr3t") {
				t.Errorf("%q: password shown in %q", uri, s)
			}
			if !strings.Contains(s, "xxxxx") {
				t.Errorf("%q: %q has no xxxxx", uri, s)
			}
		}
	}
}

func TestRedactURI(t *testing.T) {
	for _, tt := range [][2]string{
		{"mongodb://localhost:27017", "mongodb://localhost:27017"},
		{"mongodb://u:p@h:1,h:2/db?replicaSet=rs", "mongodb://u:xxxxx@h:1,h:2/db?replicaSet=rs"},
		{"mongodb+srv://u:p%40ss@c.example.net/", "mongodb+srv://u:xxxxx@c.example.net/"},
		{"mongodb://user@h", "mongodb://user@h"},
		{"mongodb://u:p/a?b@h/db", "mongodb://u:xxxxx@h/db"},
		{"mongodb://h/?tlsCertificateKeyFilePassword=p&w=1", "mongodb://h/?tlsCertificateKeyFilePassword=xxxxx&w=1"},
		{"mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:t", "mongodb://h/?authMechanismProperties=xxxxx"},
		{"u:p@h", "u:xxxxx@h"},
		{"mongodb://fbuser@s3cr3t@h:27017/", "mongodb://fbuser@xxxxx@h:27017/"},
		{"mongodb://u@p:q@h", "mongodb://u@xxxxx@h"},
		{"", ""},
	} {
		if got := RedactURI(tt[0]); got != tt[1] {
			t.Errorf("RedactURI(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

// RedactText redacts every connection string in a text, wherever it
// starts and ends.
func TestRedactText(t *testing.T) {
	for _, tt := range [][2]string{
		{"no uri here", "no uri here"},
		{"uri mongodb://u:p@h/db", "uri mongodb://u:xxxxx@h/db"},
		{`"uri mongodb://u@p@h" and 'x mongodb+srv://a:b@c/?w=1' end`, `"uri mongodb://u@xxxxx@h" and 'x mongodb+srv://a:xxxxx@c/?w=1' end`},
		{"`mongodb://u:p@h`", "`mongodb://u:xxxxx@h`"},
		{"a\tmongodb://u:p@h\nb mongodb://h2", "a\tmongodb://u:xxxxx@h\nb mongodb://h2"},
	} {
		if got := RedactText(tt[0]); got != tt[1] {
			t.Errorf("RedactText(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

// InsecureTLS names each option that turns a TLS check off, in any case
// and percent-encoded, and nothing else.
func TestInsecureTLS(t *testing.T) {
	for _, tt := range []struct{ uri, want string }{
		{"mongodb://h/?tls=true", ""},
		{"mongodb://h/?tls=true&tlsInsecure=false", ""},
		{"mongodb://u:p@h", ""},
		{"mongodb://h/?tls=true&tlsInsecure=true", "the uri says tlsInsecure=true: TLS does not verify the server"},
		{"mongodb://h/?tlsallowinvalidcertificates=TRUE&w=1", "tlsallowinvalidcertificates=TRUE: TLS"},
		{"mongodb+srv://h/?tlsAllowInvalidHostnames=%74rue", "tlsAllowInvalidHostnames=true: TLS"},
		{"mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=true", "tlsInsecure=true and tlsAllowInvalidHostnames=true"},
	} {
		got := InsecureTLS(tt.uri)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("InsecureTLS(%q) = %q, want %q", tt.uri, got, tt.want)
		}
	}
}

// AllInterfaces: no host, 0.0.0.0 and :: bind every interface.
func TestAllInterfaces(t *testing.T) {
	for v, want := range map[string]bool{":29302": true, "0.0.0.0:29302": true, "[::]:29302": true,
		"127.0.0.1:29302": false, "[::1]:29302": false, "localhost:29302": false, "10.0.0.5:29302": false} {
		if got := AllInterfaces(v); got != want {
			t.Errorf("AllInterfaces(%q) = %v, want %v", v, got, want)
		}
	}
}

// WithoutCredentials drops the user information and secret options, and
// keeps the rest as written: two uris differing only in the password are
// one.
func TestWithoutCredentials(t *testing.T) {
	for _, tt := range [][2]string{
		{"mongodb://localhost:27017", "mongodb://localhost:27017"},
		{"mongodb://u:p@h:1,h:2/db?replicaSet=rs", "mongodb://h:1,h:2/db?replicaSet=rs"},
		{"mongodb+srv://u:p%40ss@c.example.net/", "mongodb+srv://c.example.net/"},
		{"mongodb://user@h", "mongodb://h"},
		{"mongodb://h/?tlsCertificateKeyFilePassword=p&w=1", "mongodb://h/?w=1"},
		{"mongodb://h/?appName=a@b", "mongodb://h/?appName=a@b"},
		{"", ""},
	} {
		if got := WithoutCredentials(tt[0]); got != tt[1] {
			t.Errorf("WithoutCredentials(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

// Hosts names the server as a log line does: hosts only, never a
// credential, the database or an option.
func TestHosts(t *testing.T) {
	for _, tt := range [][2]string{
		{"mongodb://localhost:27017", "localhost:27017"},
		{"mongodb://u:secret@db1:27017,db2:27017/logs?replicaSet=rs&authSource=admin", "db1:27017,db2:27017"},
		{"mongodb+srv://u:p%40ss@c.example.net/", "c.example.net"},
		{"mongodb://u:p@h?tlsCertificateKeyFilePassword=x", "h"},
		{"mongodb://[::1]:27017/", "[::1]:27017"},
		{"", ""},
	} {
		if got := Hosts(tt[0]); got != tt[1] {
			t.Errorf("Hosts(%q) = %q, want %q", tt[0], got, tt[1])
		}
	}
}

func TestCheckURI(t *testing.T) {
	for _, uri := range []string{
		"mongodb://localhost",
		"mongodb://localhost:27017",
		"mongodb://localhost/",
		"mongodb://localhost/?w=majority",
		"mongodb://localhost?w=majority",
		"mongodb://u:p@h1:27017,h2:27018,h3/db?replicaSet=rs0&authSource=admin",
		"mongodb://u%40corp:p%3A%2F%40@h",
		"mongodb://user@h/?authMechanism=MONGODB-X509",
		"mongodb://[::1]:27017",
		"mongodb://[fe80::1%25eth0]",
		"mongodb://%2Ftmp%2Fmongodb-27017.sock",
		"mongodb://127.0.0.1:65535",
		"mongodb+srv://cluster0.example.net",
		"mongodb+srv://u:p@cluster0.example.net/db?retryWrites=true",
	} {
		if why := checkURI(uri); why != "" {
			t.Errorf("checkURI(%q) = %q, want valid", uri, why)
		}
	}
	for _, uri := range []string{
		"", "mongodb:/h", "MONGODB://h", "mongodb://", "mongodb://@h", "mongodb://h:", "mongodb://h:x",
		"mongodb://h:65536", "mongodb://[::1", "mongodb://[::1]x", "mongodb://[zz]", "mongodb://:27017",
		"mongodb://h/db?=x", "mongodb://h\n", "mongodb+srv://", "mongodb+srv://%2Ftmp%2Fm.sock",
		"mongodb://h\\x",
	} {
		if why := checkURI(uri); why == "" {
			t.Errorf("checkURI(%q) valid, want invalid", uri)
		}
	}
}

func TestURISources(t *testing.T) {
	srvURI := "mongodb+srv://u:p@cluster0.example.net"
	env := func(name string) string {
		if name == "MONGO_URI" {
			return "  " + srvURI + "\n"
		}
		return ""
	}
	files := map[string]string{"/run/secrets/uri": srvURI + "\n", "/empty": " \n", "/junk": "hunter2\n"}
	readFile := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return noFile(name)
	}

	c, err := Parse(Map{"uri_env": "MONGO_URI"}, env, readFile)
	if err != nil || c.URI != srvURI || c.URISource != "uri_env" {
		t.Errorf("uri_env: %+v, %v", c, err)
	}
	c, err = Parse(Map{"URI_FILE": "/run/secrets/uri"}, env, readFile)
	if err != nil || c.URI != srvURI || c.URISource != "uri_file" {
		t.Errorf("uri_file: %+v, %v", c, err)
	}

	for _, tt := range []struct {
		m    Map
		want []string
	}{
		{Map{"uri_env": "UNSET"}, []string{`uri_env: invalid value "UNSET": the environment variable is empty or not set`}},
		{Map{"uri_file": "/missing"}, []string{`uri_file: invalid value "/missing": cannot read the file: file does not exist`}},
		{Map{"uri_file": "/empty"}, []string{`uri_file: invalid value "/empty": the file is empty or not set`}},
		{Map{"uri_file": "/junk"}, []string{`uri_file: invalid value "/junk": the file does not hold a MongoDB connection string: it must start with mongodb:// or mongodb+srv:// (content not shown)`}},
		{Map{"uri_file": testURI}, []string{`uri_file: invalid value "mongodb://localhost:27017": looks like a connection string; uri_file takes the path of a file holding one (use uri for the string itself)`}},
		{Map{"uri_env": "mongodb://u:pw@h"}, []string{`uri_env: invalid value "mongodb://u:xxxxx@h": looks like a connection string; uri_env takes the name of an environment variable holding one (use uri for the string itself)`}},
		{Map{"uri": testURI, "uri_file": "/run/secrets/uri", "uri_env": "MONGO_URI"}, []string{
			`uri_file: invalid value "/run/secrets/uri": conflicts with uri; give exactly one of uri, uri_file or uri_env`,
			`uri_env: invalid value "MONGO_URI": conflicts with uri; give exactly one of uri, uri_file or uri_env`,
		}},
		{Map{"uri_file": "/run/secrets/uri", "uri_env": "MONGO_URI"}, []string{
			`uri_env: invalid value "MONGO_URI": conflicts with uri_file; give exactly one of uri, uri_file or uri_env`,
		}},
	} {
		c, err := Parse(tt.m, env, readFile)
		if got := messages(err); c != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%v:\n got %q\nwant %q", tt.m, got, tt.want)
		}
	}

	files["/bad"] = "mongodb://admin:hunter2@h:bad\n"
	_, err = Parse(Map{"uri_file": "/bad"}, env, readFile)
	want := `uri_file: invalid value "/bad": the file holds an invalid connection string "mongodb://admin:xxxxx@h:bad": the host has an invalid port (must be 1-65535)`
	if got := messages(err); len(got) != 1 || got[0] != want {
		t.Errorf("bad file content: got %q, want %q", got, want)
	}

	// nil env and readFile fall back to the real ones.
	t.Setenv("OUT_MONGODB_TEST_URI", testURI)
	if c, err := Parse(Map{"uri_env": "OUT_MONGODB_TEST_URI"}, nil, nil); err != nil || c.URI != testURI {
		t.Errorf("os.Getenv fallback: %v, %v", c, err)
	}
}

func TestMap(t *testing.T) {
	m := Map{"Database": "Mixed", "COLLECTION": "upper"}
	m.Set("Mode", "flat")
	if m.Get("database") != "Mixed" || m.Get("collection") != "upper" || m.Get("MODE") != "flat" || m.Get("nope") != "" {
		t.Errorf("Map.Get is not case-insensitive: %v", m)
	}
	if _, ok := m["mode"]; !ok {
		t.Error("Set does not store lower-case")
	}
	if got := (Map{"URI": "b", "uri": "a"}).Get("Uri"); got != "a" {
		t.Errorf("lower-case key should win, got %q", got)
	}
	if got := (Map{"Uri": "b", "URI": "a"}).Get("uri"); got != "a" {
		t.Errorf("first key in sort order should win, got %q", got)
	}
	if got := (Map{"B": "", "a": ""}).Keys(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Keys() = %q", got)
	}

	// Parse through a mixed-case literal; Fluent Bit's own keys are not unknown.
	c, err := parse(Map{"URI": testURI, "Mode": "FLAT", "Name": "mongodb", "Match": "*", "Workers": "2",
		"tls.verify": "off", "storage.total_limit_size": "1G", "net.keepalive": "on", "Log_Level": "debug"})
	if err != nil || c.Mode != model.ModeFlat {
		t.Errorf("mixed case: %v, %v", c, err)
	}
	// Values are trimmed.
	if c, err := parse(with("max_inflight", "  8 ")); err != nil || c.MaxInflight != 8 {
		t.Errorf("trim: %v, %v", c, err)
	}
}

// onlyGetter cannot list its keys (like the cgo Getter): unknown keys pass.
type onlyGetter struct{ m Map }

func (g onlyGetter) Get(k string) string { return g.m.Get(k) }

func TestUnknownKeysNeedLister(t *testing.T) {
	if _, err := Parse(onlyGetter{with("frobnicate", "1")}, noEnv, noFile); err != nil {
		t.Errorf("Getter without Keys(): %v", err)
	}
}

// TestStringRoundTrip: String() holds every key, hides the password, and
// its values parse back to the same Config.
func TestStringRoundTrip(t *testing.T) {
	uri := "mongodb://admin:" + secret + "@h1,h2/admin"
	m := with("uri", uri, "bucket_key", "a.b,c", "bucket_window", "90s", "bucket_max_bytes", "1536K",
		"stats", "x", "count_by", "y", "write_concern", "majority", "write_journal", "on",
		"parser", "regex", "parse_regex", `^(?P<time>\S+) (?P<a>\S+) "(?P<b>.*)"$`, "time_from_log", "on", "types", "a:int",
		"include_fields", "a", "exclude_fields", "a.b", "ttl", "7d", "ttl_jitter", "1500ms",
		"partition", "month", "partition_keep", "3", "instance_name", "audit")
	c, err := parse(m)
	if err != nil {
		t.Fatal(err)
	}
	s := c.String()
	if strings.Contains(s, secret) || !strings.Contains(s, "uri=mongodb://admin:xxxxx@h1,h2/admin") {
		t.Errorf("String() = %s", s)
	}
	for _, d := range Keys() {
		if !strings.HasPrefix(d.Key, "uri") && !strings.Contains(s, " "+d.Key+"=") {
			t.Errorf("String() lacks %s: %s", d.Key, s)
		}
	}
	back := Map{}
	for _, kv := range c.settings() {
		if kv[1] != "" && kv[0] != "uri_source" {
			back.Set(kv[0], kv[1])
		}
	}
	back.Set("uri", uri)
	c2, err := parse(back)
	if err != nil {
		t.Fatalf("re-parse: %v", err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Errorf("round trip:\n got %s\nwant %s", c2, c)
	}
	if !strings.Contains(c.Redacted(), "xxxxx") || c.Redacted() != RedactURI(uri) {
		t.Errorf("Redacted() = %q", c.Redacted())
	}
}

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"0s", 0}, {"30", 30 * time.Second}, {"500ms", 500 * time.Millisecond}, {"30s", 30 * time.Second},
		{"1m", time.Minute}, {"1h", time.Hour}, {"7d", 7 * day}, {"1.5h", 90 * time.Minute}, {"1d12h", 36 * time.Hour},
		{"1h30m", 90 * time.Minute}, {"0.5d", 12 * time.Hour},
	} {
		if got, why := parseDuration(tt.in); why != "" || got != tt.want {
			t.Errorf("parseDuration(%q) = %v, %q; want %v", tt.in, got, why, tt.want)
		}
	}
	for _, in := range []string{"", "s", "1", "-1s", "+1s", "1S", "1M", "1H", "1D", "1w", "1y", "1ns", "1us", "1µs",
		"1.2.3s", "1 s", "s1", "1e3s", "99999999999999999999", "9223372037s", "106752d", "1d1", "NaN"} {
		if in == "1" {
			continue
		}
		if got, why := parseDuration(in); why == "" {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"512B", 512}, {"512K", 512 << 10}, {"1M", 1 << 20}, {"1.5M", 3 << 19}, {"1G", 1 << 30},
		{"4KB", 4096}, {"4kb", 4096}, {"4KiB", 4096}, {"2MB", 2 << 20}, {"2MiB", 2 << 20}, {"2mib", 2 << 20},
		{"1GB", 1 << 30}, {"1GiB", 1 << 30}, {"0.5K", 512}, {"8589934591G", 8589934591 << 30},
	} {
		if got, why := parseSize(tt.in); why != "" || got != tt.want {
			t.Errorf("parseSize(%q) = %v, %q; want %v", tt.in, got, why, tt.want)
		}
	}
	for _, in := range []string{"", "K", "-1", "1.5", "0.1K", "1T", "1 MBs", "1.M", ".5M", "1..5M", "1/2M", "1e3",
		"8589934592G", "99999999999999999999", "1,5M"} {
		if got, why := parseSize(in); why == "" {
			t.Errorf("parseSize(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"on": true, "ON": true, "true": true, "True": true, "yes": true, "1": true,
		"off": false, "Off": false, "false": false, "FALSE": false, "no": false, "0": false} {
		if got, why := parseBool(in); why != "" || got != want {
			t.Errorf("parseBool(%q) = %v, %q", in, got, why)
		}
	}
	for _, in := range []string{"", "y", "n", "2", "enable", "onn", "t"} {
		if _, why := parseBool(in); why == "" {
			t.Errorf("parseBool(%q) accepted", in)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, time.Second, 90 * time.Second,
		time.Hour, 36 * time.Hour, 7 * day, time.Microsecond} {
		if d == time.Microsecond {
			if formatDuration(d) != "1µs" {
				t.Errorf("formatDuration(1µs) = %q", formatDuration(d))
			}
			continue
		}
		if got, why := parseDuration(formatDuration(d)); why != "" || got != d {
			t.Errorf("duration %v -> %q -> %v %q", d, formatDuration(d), got, why)
		}
	}
	for _, n := range []int64{0, 1, 1023, 1024, 1536, 1 << 20, 3 << 19, 1 << 30, 5 << 30} {
		if got, why := parseSize(formatSize(n)); why != "" || got != n {
			t.Errorf("size %d -> %q -> %d %q", n, formatSize(n), got, why)
		}
	}
}

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{"bucket_windw": "bucket_window", "colection": "collection", "ur": "uri",
		"ttl_jiter": "ttl_jitter", "loglevel": "", "xyz": ""} {
		if got := suggest(in); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// Changed names exactly the settings that differ from their defaults.
func TestChanged(t *testing.T) {
	c, err := parse(with("collection", "app", "bucket_key", "host, module", "ttl", "7d", "write_batch", "100", "tag_key", "my tag"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Changed(), `collection=app bucket_key=host,module tag_key="my tag" ttl=7d`; got != want {
		t.Errorf("Changed() = %s, want %s", got, want)
	}
	d, err := parse(with())
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Changed(); got != "" {
		t.Errorf("defaults: Changed() = %s, want nothing", got)
	}
	// A collection template's derived dead letters are its default too;
	// set to the same text by hand they are named.
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"collection", "k_$ns"}, `collection=k_$ns`},
		{[]string{"collection", "k_$ns", "dead_letter_collection", "parked"}, `collection=k_$ns dead_letter_collection=parked`},
		{[]string{"collection", "k_$ns", "partition", "day"}, `collection=k_$ns partition=day`},
	} {
		tc, err := parse(with(c.kv...))
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.Changed(); !strings.HasPrefix(got, c.want) || strings.Contains(got, "dead_letter") != strings.Contains(c.want, "dead_letter") {
			t.Errorf("%q: Changed() = %s, want %s", c.kv, got, c.want)
		}
	}
}

// A key's range is held once, in ranges: Parse accepts its bounds and
// refuses a value just outside them with the range in the message, and the
// key table's meaning says the same range.
func TestRangesHeldOnce(t *testing.T) {
	// Keys that need another one set for their own value to be good.
	companions := map[string]Map{
		"capped_max":     {"capped_size": "1M", "mode": "flat"},
		"capped_size":    {"mode": "flat"},
		"partition_keep": {"partition": "day"},
		"target_limit":   {"collection": "k_$TAG"},
	}
	for key, b := range ranges {
		d, ok := lookupKey(key)
		if !ok {
			t.Errorf("ranges names %s, which the key table lacks", key)
			continue
		}
		if !strings.Contains(d.Meaning, b.text()) {
			t.Errorf("%s: meaning %q does not say its range %s", key, d.Meaning, b.text())
		}
		if b.zero != "" && !strings.Contains(d.Meaning, "`0`") {
			t.Errorf("%s: meaning %q does not say what 0 means", key, d.Meaning)
		}
		step, write := int64(1), func(n int64) string { return strconv.FormatInt(n, 10) }
		if b.unit == durations {
			step = int64(time.Millisecond)
			write = func(n int64) string { return strconv.FormatInt(n/step, 10) + "ms" }
		}
		good, bad := []int64{b.lo}, []int64{b.lo - step}
		if b.hi != noUpper {
			good, bad = append(good, b.hi), append(bad, b.hi+step)
		}
		if b.zero != "" {
			good = append(good, 0)
		}
		parse := func(v string) string {
			m := Map{"uri": "mongodb://db", key: v}
			for k, cv := range companions[key] {
				m[k] = cv
			}
			_, err := Parse(m, nil, nil)
			return fmt.Sprint(err)
		}
		for _, n := range good {
			if v := write(n); strings.Contains(parse(v), key+": ") {
				t.Errorf("%s=%s: %s, want it accepted", key, v, parse(v))
			}
		}
		for _, n := range bad {
			v := write(n)
			want := fmt.Sprintf("%s: invalid value %q: %s", key, v, b.message())
			if key == "write_concern" { // its message also offers majority
				want = fmt.Sprintf("%s: invalid value %q: ", key, v)
			}
			if got := parse(v); !strings.Contains(got, want) || !strings.Contains(got, b.text()) && !strings.Contains(got, b.span()) {
				t.Errorf("%s=%s: %s, want %q with the range", key, v, got, want)
			}
		}
	}
	for _, d := range Keys() {
		if strings.Contains(d.Meaning, "{range}") {
			t.Errorf("%s: meaning %q writes {range}, but ranges has none for it", d.Key, d.Meaning)
		}
	}
}

// The parsing keys come compiled: the line parser with its time key and
// format, and the types map, built once as the keys are read.
func TestParsingCompiled(t *testing.T) {
	c, err := parse(Map{"uri": testURI, "parser": "json", "parse_time_key": "at", "parse_time_format": "%Y-%m-%d %H:%M:%S",
		"time_from_log": "on", "types": "cost:int, ok:bool"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Line == nil || c.Line.TimeKey() != "at" {
		t.Errorf("line parser %#v, want json's with time key at", c.Line)
	}
	if want := map[string]parser.Kind{"cost": parser.KindInt, "ok": parser.KindBool}; !reflect.DeepEqual(c.TypeKinds, want) {
		t.Errorf("types %v, want %v", c.TypeKinds, want)
	}
	if c, err := parse(Map{"uri": testURI}); err != nil || c.Line != nil || c.TypeKinds != nil {
		t.Errorf("defaults: line %v, types %v, err %v; want none", c.Line, c.TypeKinds, err)
	}
}
