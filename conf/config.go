// Package conf reads and validates the [OUTPUT] properties of the MongoDB
// output plugin. It is pure Go: the cgo layer wraps FLBPluginConfigKey in a
// Getter, tests use Map.
package conf

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Getter reads one configuration property. An unset key returns "".
type Getter interface {
	Get(key string) string
}

// ParserKind selects how the raw log line under parse_key is parsed.
type ParserKind string

const (
	ParserNone           ParserKind = "none"
	ParserApacheCommon   ParserKind = "apache_common"
	ParserApacheCombined ParserKind = "apache_combined"
	ParserApacheError    ParserKind = "apache_error"
	ParserNginxAccess    ParserKind = "nginx_access"
	ParserJSON           ParserKind = "json"
	ParserLogfmt         ParserKind = "logfmt"
	ParserRegex          ParserKind = "regex"
)

// IDAction is what a record whose id_key _id is stored already does.
type IDAction string

const (
	IDKeep    IDAction = "keep"    // the first stored wins
	IDReplace IDAction = "replace" // the last one wins, replacing the document whole
)

// LogLevel is the plugin's own log level (Fluent Bit keeps log_level).
type LogLevel string

const (
	LogError LogLevel = "error"
	LogWarn  LogLevel = "warn"
	LogInfo  LogLevel = "info"
	LogDebug LogLevel = "debug"
)

// WriteConcern is the w option. The zero value means the server default.
type WriteConcern struct {
	Majority bool
	W        int // 1..50 when set and Majority is false
}

// IsDefault reports whether the server default applies.
func (w WriteConcern) IsDefault() bool { return !w.Majority && w.W == 0 }

// String renders w as the user writes it ("" for the server default).
func (w WriteConcern) String() string {
	switch {
	case w.Majority:
		return "majority"
	case w.W > 0:
		return strconv.Itoa(w.W)
	}
	return ""
}

// Config is the validated configuration of one [OUTPUT] instance.
type Config struct {
	URI       string // the real connection string, credentials included: never log it, use Redacted
	URISource string // the key that gave it: "uri", "uri_file" or "uri_env"

	// Database, Collection and DeadLetterCollection are as written: a
	// name, or a template (see Targets).
	Database   string
	Collection string
	// Targets are the three names parsed as templates, each ready to
	// resolve (Missing and Reserve set). TargetMissing stands for a
	// placeholder without a usable value, TargetOverflow for the record
	// placeholders of a record's target beyond TargetLimit distinct ones.
	Targets        Targets
	TargetMissing  string
	TargetOverflow string
	TargetLimit    int

	Mode             model.Mode
	BucketKey        []string      // field paths; empty means the tag
	BucketWindow     time.Duration // 0 means no window (group by key only)
	BucketMaxRecords int
	BucketMaxBytes   int64
	Stats            []string // field paths aggregated as {min,max,sum}
	CountBy          []string // field paths whose values are counted
	KeepValues       []string // field paths whose distinct values each bucket keeps
	Indexes          []Index  // the user's indexes, beside the plugin's own
	// IDKey, in mode flat, is the top-level stored field whose value is
	// the document's _id; "" means the plugin's own ids. IDAction says
	// what a repeat of a stored _id does.
	IDKey    string
	IDAction IDAction

	Idempotent  bool
	MaxInflight int
	WriteBatch  int
	// ShardKey is the key the plugin shards the collections it creates
	// on; nil: none.
	ShardKey             []ShardField
	FlushTimeout         time.Duration
	ConnectTimeout       time.Duration
	DeadLetterCollection string
	WriteConcern         WriteConcern
	WriteJournal         *bool // nil means the server default

	Parser     ParserKind
	ParseKey   string
	ParseRegex string // set only with ParserRegex; compiles and has a named group
	// ParseTimeKey and ParseTimeFormat (as written; "" is the default
	// format, and it compiles) apply to ParserJSON and ParserLogfmt.
	ParseTimeKey    string
	ParseTimeFormat string
	TimeFromLog     bool
	Types           string // "field:kind,..." as written (trimmed); the parser package interprets it
	// Line is the line parser the keys above describe, compiled once (nil
	// with ParserNone); TypeKinds is Types compiled (nil when empty).
	Line      parser.LineParser
	TypeKinds map[string]parser.Kind

	IncludeFields    []string
	ExcludeFields    []string
	KeyReplaceDot    string
	KeyReplaceDollar string
	KeepMetadata     bool
	TagKey           string
	TimeKey          string

	TTL           time.Duration // 0 means off
	TTLJitter     time.Duration
	TTLRules      []TTLRule
	TTLBurstLimit int64
	TTLDeleteRate int
	DeadLetterTTL time.Duration // 0 keeps dead letters
	Partition     layout.Period
	PartitionKeep int // 0 means keep all
	CappedSize    int64
	CappedMax     int64
	Compression   string // "" means the server's default
	Validate      bool
	CreateIndexes bool

	PluginLogLevel LogLevel
	InstanceName   string // empty: the plugin layer names the instance
	AgentID        string // empty: the host name (see instance.claimAgent)
	MetricsListen  string // host:port of the /metrics endpoint; empty: none
	LockDir        string // the folder of the agent slots' lock files (see instance.claimAgent)
}

// ShardField is one field of a shard key: "_id", "start", or a bucket_key
// path (the tag_key when bucket_key is empty), whose stored field is
// key.<path> with dots replaced.
type ShardField = model.ShardField

// Index is one index a user asks for: its fields in order, each ascending
// (1) or descending (-1).
type Index []IndexField

// IndexField is one field of an Index.
type IndexField = model.IndexField

// TTLRule gives records whose Field holds Value a retention of TTL instead
// of ttl. Field is a bucket_key path in bucket mode, a top-level field in
// flat mode.
type TTLRule struct {
	Field, Value string
	TTL          time.Duration
}

// KeyDoc documents one configuration key.
type KeyDoc struct {
	Key     string
	Default string // as the user would write it; "" means unset (see Meaning)
	Meaning string
}

// ranges bound the whole-number, duration and size keys: Parse checks
// them, and the key table's meaning says them where it writes {range}, so
// the README, mongolog and the check cannot disagree. A key without a range
// takes any value its unit allows.
var ranges = map[string]bound{
	"bucket_window":      durationRange(time.Second, day).orZero("no window"),
	"bucket_max_records": wholeRange(1, 100000),
	"bucket_max_bytes":   sizeRange(kib, 15*mib).because("MongoDB documents are limited to 16M"),
	"max_inflight":       wholeRange(1, 64),
	"write_batch":        wholeRange(1, 1000),
	"flush_timeout":      durationRange(time.Second, 10*time.Minute),
	"connect_timeout":    durationRange(time.Second, 5*time.Minute),
	"write_concern":      wholeRange(1, 50), // members, besides majority
	"ttl":                durationRange(time.Minute, maxTTL).orZero("off").because("MongoDB's TTL limit"),
	"ttl_burst_limit":    wholeRange(0, 1<<31-1),
	"ttl_delete_rate":    wholeRange(1, 1000000),
	"dead_letter_ttl":    durationRange(time.Minute, maxTTL).orZero("keep parked records").because("MongoDB's TTL limit"),
	"partition_keep":     wholeRange(0, 1<<31-1),
	"target_limit":       wholeRange(1, 100000),
	"capped_size":        sizeRange(4*kib, noUpper).orZero("not capped"),
	"capped_max":         wholeRange(0, 1<<31-1),
}

// bound is the range of one key: lo to hi, and 0 as well when zero says
// what 0 means.
type bound struct {
	unit   unit
	lo, hi int64  // hi is noUpper for "at least lo"
	zero   string // what 0 means when it is allowed outside lo to hi
	why    string // what sets the limit, said in the message
}

// unit is how a bound's values are written.
type unit int

const (
	wholeNumbers unit = iota
	durations
	sizes
)

const noUpper = math.MaxInt64

func wholeRange(lo, hi int64) bound { return bound{unit: wholeNumbers, lo: lo, hi: hi} }
func durationRange(lo, hi time.Duration) bound {
	return bound{unit: durations, lo: int64(lo), hi: int64(hi)}
}
func sizeRange(lo, hi int64) bound { return bound{unit: sizes, lo: lo, hi: hi} }

func (b bound) orZero(means string) bound { b.zero = means; return b }
func (b bound) because(why string) bound  { b.why = why; return b }

// inSpan reports whether n is within lo to hi.
func (b bound) inSpan(n int64) bool { return n >= b.lo && n <= b.hi }

// holds reports whether n is allowed: within lo to hi, or an allowed 0.
func (b bound) holds(n int64) bool { return b.inSpan(n) || b.zero != "" && n == 0 }

// format writes n in the bound's unit. Durations are written in hours at
// most, so that a day reads 24h.
func (b bound) format(n int64) string {
	switch b.unit {
	case durations:
		if d := time.Duration(n); d%time.Hour == 0 {
			return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
		}
		return formatDuration(time.Duration(n))
	case sizes:
		return formatSize(n)
	}
	return strconv.FormatInt(n, 10)
}

// span is lo to hi as a message says it.
func (b bound) span() string {
	if b.hi == noUpper {
		return "at least " + b.format(b.lo)
	}
	return "between " + b.format(b.lo) + " and " + b.format(b.hi)
}

// message is the reason of a value outside the bound.
func (b bound) message() string {
	if b.unit == wholeNumbers {
		return "must be a whole number " + b.span()
	}
	m := "must be "
	if b.zero != "" {
		m += "0 (" + b.zero + ") or "
	}
	m += b.span()
	if b.why != "" {
		m += " (" + b.why + ")"
	}
	return m
}

// text is how a key's meaning writes the bound (what 0 means is the
// meaning's own prose).
func (b bound) text() string {
	switch {
	case b.hi == noUpper:
		return "at least " + b.format(b.lo)
	case b.unit == wholeNumbers && b.hi-b.lo <= 1000000:
		return b.format(b.lo) + "-" + b.format(b.hi)
	}
	return b.format(b.lo) + " to " + b.format(b.hi)
}

func init() {
	for i, d := range keyTable {
		if b, ok := ranges[d.Key]; ok {
			keyTable[i].Meaning = strings.ReplaceAll(d.Meaning, "{range}", b.text())
		}
	}
}

// keyTable is the one place that lists the keys, their defaults and their
// meaning. Parse takes every default from here, through the same parsing as
// a user-written value.
var keyTable = []KeyDoc{
	{"uri", "", "MongoDB connection string (`mongodb://` or `mongodb+srv://`). Exactly one of uri, uri_file, uri_env is required. Never logged: the password is shown as xxxxx."},
	{"uri_file", "", "Path of a file holding the connection string (surrounding whitespace trimmed), e.g. a mounted secret."},
	{"uri_env", "", "Name of an environment variable holding the connection string."},
	{"database", "fluentbit", "Database name (non-empty, under 64 bytes, none of `/\\. \"$` or NUL, not `admin`, `local` or `config`), or a template of the tag and record fields such as `logs_$TAG[1]` (see Targets from the record)."},
	{"collection", "logs", "Collection name (non-empty, at most 200 bytes, no `$` or NUL, not starting with `system.`; `<database>.<collection>` with any partition suffix at most 235 bytes, as servers on DocumentDB allow), or a template such as `k8s_$kubernetes['namespace_name']` (see Targets from the record)."},
	{"target_missing", "unknown", "Templates only (refused when database, collection and dead_letter_collection are fixed names): the value of a placeholder whose value is missing, empty, or not a string, number or boolean (`[A-Za-z0-9_-]`, at most 64 bytes)."},
	{"target_overflow", "other", "Templates only (refused when database, collection and dead_letter_collection are fixed names): beyond target_limit targets, a record goes to its template's target with every record placeholder replaced by this (`[A-Za-z0-9_-]`, at most 64 bytes)."},
	{"target_limit", "1000", "Templates only (refused when database, collection and dead_letter_collection are fixed names): an instance opens a new (database, collection) target only while fewer than this many are open, those that exist already included ({range}); records of any further target go to the overflow target, with one warning a minute."},
	{"mode", "bucket", "`bucket`: many records per document, grouped by bucket_key and bucket_window; `flat`: one document per record."},
	{"bucket_key", "", "Comma-separated field paths (dotted, e.g. `kubernetes.pod_name`) that group records into buckets; empty means the tag. Bucket mode only."},
	{"bucket_window", "1m", "Time window of a bucket: {range} and dividing 24h evenly (windows align with UTC days), or `0` for no window. Bucket mode only."},
	{"bucket_max_records", "1000", "Records per bucket document before a new one starts ({range}). Bucket mode only."},
	{"bucket_max_bytes", "1M", "Size of a bucket document before a new one starts ({range}; MongoDB's limit is 16M). Bucket mode only."},
	{"stats", "", "Comma-separated field paths whose numeric values get {min,max,sum,n} per bucket (n: how many were numbers, so sum / n is the exact average). Bucket mode only."},
	{"count_by", "", "Comma-separated field paths whose values are counted per bucket. Bucket mode only."},
	{"keep_values", "", "Comma-separated field paths whose distinct values each bucket keeps under `values.<field>` (at most 100 per bucket, then `valuesTruncated.<field>: true`), so that an index on `values.<field>` finds the buckets of, say, a trace id. Bucket mode only."},
	{"indexes", "", "The user's indexes, created with the plugin's own before the first write to each collection: comma-separated, each a field or `+`-joined fields, each optionally `:-1` (descending), e.g. `values.traceId, start:-1, key.module+logs.level`."},
	{"id_key", "", "Mode flat: the top-level field (as stored: after parser, types, field filters and renaming) whose value becomes the document's `_id`, so a record carrying its own event id is stored once however many agents, replays or imports send it. Strings (not empty), integers (a double holding an integer up to 2^53 counts as that integer) and ObjectIds; a record without the field gets the plugin's own id, one with any other value is parked. See Document model."},
	{"id_action", "keep", "With id_key, what a record whose `_id` is stored already does: `keep` (the first stored wins; the repeat counts as already stored) or `replace` (the last one wins: it replaces the stored document whole; not with capped_size)."},
	{"idempotent", "on", "Bucket mode: record each write in the bucket's `ops` array and look up what earlier attempts of a chunk stored before writing it, so a chunk that Fluent Bit resends adds nothing twice. Flat documents always get ids derived from the chunk and its generation."},
	{"max_inflight", "4", "Write commands in flight at once per instance, over all its flushes and workers, in bucket and flat mode ({range})."},
	{"write_batch", "100", "Bucket writes (and flat `id_action replace` replacements) sent in one unordered update command ({range}); `1` sends one write per command. On FerretDB v1, which deadlocks on larger update batches, the plugin lowers it to 20 (it says so once)."},
	{"shard_key", "none", "Shard every collection the plugin creates (partitions included) before its first write: `none`, `hashed_id` (`{_id: hashed}`), `key_start` (`{key.<bucket_key fields>: 1, start: 1}`), or a comma-separated list of `_id`, `start` and bucket_key fields, each optionally `:hashed` (one at most). Mode flat takes only `hashed_id`. A server that refuses gets one warning; writing goes on."},
	{"flush_timeout", "30s", "Deadline for writing one chunk ({range}); past it the chunk is retried."},
	{"connect_timeout", "10s", "Deadline for connecting to MongoDB ({range})."},
	{"dead_letter_collection", "<collection>_dead", "Collection for records that cannot be written (poison records), or a template (in the record's database). Cannot be disabled; must differ from collection."},
	{"write_concern", "", "Write concern w: `majority` or {range}; empty means the server default. `0` is rejected: chunks are acknowledged only after confirmed writes. With `majority`, the reads that decide whether a write is already stored use read concern majority."},
	{"write_journal", "", "Write concern j (on/off); empty means the server default."},
	{"parser", "none", "Parse the line under parse_key: none, apache_common, apache_combined, apache_error, nginx_access, json, logfmt, regex."},
	{"parse_key", "log", "Field holding the raw line to parse."},
	{"parse_regex", "", "Go regular expression with named groups; required with `parser regex`, not allowed otherwise."},
	{"parse_time_key", "time", "Parsers json and logfmt: the top-level field holding the line's time. When parse_time_format reads it, it is stored as a date (with time_from_log on it becomes the record time instead); otherwise it stays as written."},
	{"parse_time_format", "", "Parsers json and logfmt: how parse_time_key is read. Unset: ISO 8601 / RFC 3339 with or without fractional seconds and zone (`2024-06-01T10:00:00.123Z`, `2024-06-01 10:00:00+02:00`; no zone is UTC), the Common Log Format's (`10/Oct/2000:13:55:36 -0700`) and the Apache error log's (`Wed Oct 11 14:32:52 2000`) times and, with time_from_log on, seconds since 1970 (`1717236000.5`, as a number or a string). Otherwise a strptime-style format as Fluent Bit's parsers write them, e.g. `%d/%b/%Y:%H:%M:%S %z` or `%Y-%m-%dT%H:%M:%S.%L%z`, with " + parser.TimeDirectives + "."},
	{"time_from_log", "off", "Use the time parsed from the line as the record time. Needs a parser that gives one: apache_common, apache_combined, apache_error, nginx_access, json and logfmt (parse_time_key), regex with a group named `time`. A line without one is kept as a line that does not parse, with Fluent Bit's time."},
	{"types", "", "Comma-separated `field:kind` conversions of top-level fields, a parsed line's included, kind one of " + parser.AllowedKinds + "."},
	{"include_fields", "", "Comma-separated field paths to keep (all others dropped); applied before exclude_fields."},
	{"exclude_fields", "", "Comma-separated field paths to drop; a path may not also be in include_fields."},
	{"key_replace_dot", "_", "Replacement for `.` in field names (no `.`, not starting with `$`)."},
	{"key_replace_dollar", "_", "Replacement for a leading `$` in field names (no `.`, not starting with `$`)."},
	{"keep_metadata", "off", "Store the Fluent Bit record metadata under `_meta`."},
	{"tag_key", "tag", "Field that holds the tag (in buckets' `key` when bucket_key is empty, and in flat documents); no `.`, not starting with `$`."},
	{"time_key", "ts", "Field that holds the record time; no `.`, not starting with `$`."},
	{"ttl", "0", "Expire documents this long after their time (a bucket's window end, or its newest entry without a window; a flat record's time) with a TTL index on `expireAt`; `0` means never, otherwise {range}. Changing it later changes the index in place (collMod); see Retention."},
	{"ttl_jitter", "0", "Extra delay per document, fixed per bucket (or flat document), 0 to ttl, so deletions do not spike; needs ttl."},
	{"ttl_rules", "", "Per-key retention, first match wins, ttl for the rest: comma-separated `field=value:duration`, e.g. `module=audit:365d, level=debug:1d`. Bucket mode: bucket_key fields only; flat mode: top-level fields. Needs ttl."},
	{"ttl_burst_limit", "100000", "When a lower ttl (or a ttl turned on) would expire more documents than this at once, they are deleted first at ttl_delete_rate, then the index is changed ({range})."},
	{"ttl_delete_rate", "5000", "Documents per second deleted before lowering ttl, and given an `expireAt` when ttl is turned on for documents without one ({range})."},
	{"dead_letter_ttl", "30d", "Delete parked records this long after they were parked (TTL index on `parkedAt`); `0` keeps them, otherwise {range}."},
	{"partition", "none", "Write to time-partitioned collections: `none`, `day` (`<collection>_YYYYMMDD`), `week` (`<collection>_YYYYwWW`, ISO weeks) or `month` (`<collection>_YYYYMM`), by the record's UTC time."},
	{"partition_keep", "0", "With partition: how many periods to keep ({range}), counted back from the current UTC day, ISO week or month (`3`: today and the two days before); older partitions are dropped whole, older records parked; `0` keeps all."},
	{"capped_size", "0", "Create the collection capped at this size ({range}); `0` means not capped. Needs mode flat; not with ttl or partition."},
	{"capped_max", "0", "With capped_size: also cap the collection at this many documents ({range}); `0` means no document limit."},
	{"compression", "", "Block compressor of the collections the plugin creates: `zstd`, `snappy`, `zlib` or `none`; empty means the server's default. A server that refuses gets one warning per collection."},
	{"validate", "off", "Create collections with a `$jsonSchema` validator requiring the bucket fields (flat: the time) and BSON dates for `start`, `end`, `minTs`, `maxTs`, `expireAt`. A server that refuses gets one warning per collection."},
	{"create_indexes", "on", "Create the indexes the plugin needs (bucket lookup `key,start`, flat `tag,ts`, TTL on `expireAt`) before the first write to each collection."},
	{"plugin_log_level", "info", "Plugin log level: error, warn, info, debug (Fluent Bit keeps `log_level` for itself)."},
	{"instance_name", "", "Name used in log prefixes (no spaces or `]`); empty means `mongodb.N`, N counting the plugin's outputs from 0."},
	{"agent_id", "", "Names this agent in what it writes, so that only its own resent chunks are recognised (no spaces or `]`); empty means the host name. Give each agent its own where agents share a host name but not `lock_dir` (containers with the host's network), where agents of one output on one host may restart at once, and where the host name changes across restarts (a DaemonSet's pods): see Delivery semantics."},
	{"metrics_listen", "", "`host:port` to serve Prometheus metrics on at `/metrics` (e.g. `127.0.0.1:2021`); outputs naming the same address share it, told apart by the `output` label. Empty: no metrics."},
	{"lock_dir", defaultLockDir, "Absolute path of the folder (created 0700 if missing; refused when it is a link, another user's or writable by others) holding the lock files of the agents' slots (see agent_id); `<uid>` is the user the plugin runs as; a leading `$TMPDIR` is the environment's temporary folder (`/tmp` when TMPDIR is unset). Under a read-only root file system (a container's `readOnlyRootFilesystem`) give a writable folder, a hostPath on Kubernetes so that the slots of the pods on one node are one set."},
}

// indexesString is indexes as a user writes it.
func (c *Config) indexesString() string {
	parts := make([]string, len(c.Indexes))
	for i, ix := range c.Indexes {
		fields := make([]string, len(ix))
		for j, f := range ix {
			fields[j] = f.Path
			if f.Order < 0 {
				fields[j] += ":-1"
			}
		}
		parts[i] = strings.Join(fields, "+")
	}
	return strings.Join(parts, ",")
}

// ttlRulesString is ttl_rules as a user writes it.
func (c *Config) ttlRulesString() string {
	parts := make([]string, len(c.TTLRules))
	for i, r := range c.TTLRules {
		parts[i] = r.Field + "=" + r.Value + ":" + formatDuration(r.TTL)
	}
	return strings.Join(parts, ",")
}

// shardKeyString is the shard key as a user writes it.
func (c *Config) shardKeyString() string {
	if len(c.ShardKey) == 0 {
		return "none"
	}
	parts := make([]string, len(c.ShardKey))
	for i, f := range c.ShardKey {
		parts[i] = f.Name
		if f.Hashed {
			parts[i] += ":hashed"
		}
	}
	return strings.Join(parts, ",")
}

// Redacted returns the connection string with its password hidden.
func (c *Config) Redacted() string { return RedactURI(c.URI) }

// String renders the configuration as key=value pairs in Keys() order, with
// the connection string redacted. Values with spaces or quotes are quoted.
func (c *Config) String() string {
	var b strings.Builder
	for i, kv := range c.settings() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(quoteValue(kv[1]))
	}
	return b.String()
}

// quoteValue quotes a value that is empty or holds spaces or quotes.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"'\\") {
		return strconv.Quote(v)
	}
	return v
}

// Changed renders, as String does, the settings that differ from their
// defaults, but for the connection: what the plugin took beyond what it
// would have taken anyway.
func (c *Config) Changed() string {
	base, err := Parse(Map{"uri": "mongodb://localhost"}, func(string) string { return "" }, nil)
	if err != nil {
		return ""
	}
	defaults := map[string]string{}
	for _, kv := range base.settings() {
		defaults[kv[0]] = kv[1]
	}
	var b strings.Builder
	for _, kv := range c.settings() {
		derived := kv[0] == "dead_letter_collection" && kv[1] == c.derivedDeadLetter()
		if kv[0] == "uri" || kv[0] == "uri_source" || derived || kv[1] == defaults[kv[0]] {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[0] + "=" + quoteValue(kv[1]))
	}
	return b.String()
}

// settings lists the effective value of every key as a user would write it;
// uri is redacted and its source given as uri_source.
func (c *Config) settings() [][2]string {
	journal := ""
	if c.WriteJournal != nil {
		journal = formatBool(*c.WriteJournal)
	}
	return [][2]string{
		{"uri", c.Redacted()},
		{"uri_source", c.URISource},
		{"database", c.Database},
		{"collection", c.Collection},
		{"target_missing", c.TargetMissing},
		{"target_overflow", c.TargetOverflow},
		{"target_limit", strconv.Itoa(c.TargetLimit)},
		{"mode", string(c.Mode)},
		{"bucket_key", strings.Join(c.BucketKey, ",")},
		{"bucket_window", formatDuration(c.BucketWindow)},
		{"bucket_max_records", strconv.Itoa(c.BucketMaxRecords)},
		{"bucket_max_bytes", formatSize(c.BucketMaxBytes)},
		{"stats", strings.Join(c.Stats, ",")},
		{"count_by", strings.Join(c.CountBy, ",")},
		{"keep_values", strings.Join(c.KeepValues, ",")},
		{"indexes", c.indexesString()},
		{"id_key", c.IDKey},
		{"id_action", string(c.IDAction)},
		{"idempotent", formatBool(c.Idempotent)},
		{"max_inflight", strconv.Itoa(c.MaxInflight)},
		{"write_batch", strconv.Itoa(c.WriteBatch)},
		{"shard_key", c.shardKeyString()},
		{"flush_timeout", formatDuration(c.FlushTimeout)},
		{"connect_timeout", formatDuration(c.ConnectTimeout)},
		{"dead_letter_collection", c.DeadLetterCollection},
		{"write_concern", c.WriteConcern.String()},
		{"write_journal", journal},
		{"parser", string(c.Parser)},
		{"parse_key", c.ParseKey},
		{"parse_regex", c.ParseRegex},
		{"parse_time_key", c.ParseTimeKey},
		{"parse_time_format", c.ParseTimeFormat},
		{"time_from_log", formatBool(c.TimeFromLog)},
		{"types", c.Types},
		{"include_fields", strings.Join(c.IncludeFields, ",")},
		{"exclude_fields", strings.Join(c.ExcludeFields, ",")},
		{"key_replace_dot", c.KeyReplaceDot},
		{"key_replace_dollar", c.KeyReplaceDollar},
		{"keep_metadata", formatBool(c.KeepMetadata)},
		{"tag_key", c.TagKey},
		{"time_key", c.TimeKey},
		{"ttl", formatDuration(c.TTL)},
		{"ttl_jitter", formatDuration(c.TTLJitter)},
		{"ttl_rules", c.ttlRulesString()},
		{"ttl_burst_limit", strconv.FormatInt(c.TTLBurstLimit, 10)},
		{"ttl_delete_rate", strconv.Itoa(c.TTLDeleteRate)},
		{"dead_letter_ttl", formatDuration(c.DeadLetterTTL)},
		{"partition", partitionName(c.Partition)},
		{"partition_keep", strconv.Itoa(c.PartitionKeep)},
		{"capped_size", formatSize(c.CappedSize)},
		{"capped_max", strconv.FormatInt(c.CappedMax, 10)},
		{"compression", c.Compression},
		{"validate", formatBool(c.Validate)},
		{"create_indexes", formatBool(c.CreateIndexes)},
		{"plugin_log_level", string(c.PluginLogLevel)},
		{"instance_name", c.InstanceName},
		{"agent_id", c.AgentID},
		{"metrics_listen", c.MetricsListen},
		{"lock_dir", c.LockDir},
	}
}
