package conf

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

// Error is one configuration problem. Its message is
// `<key>: invalid value "<value>": <reason>`, or `<key>: <reason>` for a
// missing or unknown key. A value that may hold a password is redacted.
type Error struct {
	Key     string
	Value   string
	Reason  string
	NoValue bool
}

func (e *Error) Error() string {
	if e.NoValue {
		return e.Key + ": " + e.Reason
	}
	return e.Key + ": invalid value " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Limits that are not plain defaults.
const (
	maxTTL           = 2147483647 * time.Second // expireAfterSeconds is a 32-bit integer
	deadLetterSuffix = "_dead"                  // default dead_letter_collection is <collection>_dead
)

// Parse reads every key from g, applies the defaults of Keys(), validates
// each value and the combinations, and returns all problems at once (joined
// with errors.Join; each one is an *Error). env and readFile resolve uri_env
// and uri_file; nil means os.Getenv and os.ReadFile. Parse does no network I/O.
func Parse(g Getter, env func(string) string, readFile func(string) ([]byte, error)) (*Config, error) {
	if g == nil {
		g = Map{}
	}
	if env == nil {
		env = os.Getenv
	}
	if readFile == nil {
		readFile = os.ReadFile
	}
	r := &reader{g: g, set: map[string]string{}, bad: map[string]bool{}}
	c := &Config{}
	// The groups read their keys in the key table's order, which is the
	// order of the errors.
	r.readConnection(c, env, readFile)
	r.readBuckets(c)
	r.readWrites(c)
	r.readParsing(c)
	r.readFields(c)
	r.readRetention(c)
	r.readPlugin(c)
	r.combinations(c)
	r.compileParsing(c)
	r.unknownKeys()
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return c, nil
}

// readConnection reads where to connect and what to write to.
func (r *reader) readConnection(c *Config, env func(string) string, readFile func(string) ([]byte, error)) {
	c.URI, c.URISource = r.uri(env, readFile)
	c.Database = r.templateName("database", checkDatabase, naming.ParseDatabase)
	c.Collection = r.templateName("collection", checkCollection, naming.Parse)
	c.TargetMissing = r.targetValue("target_missing")
	c.TargetOverflow = r.targetValue("target_overflow")
	c.TargetLimit = r.integer("target_limit")
}

// readBuckets reads the document model and what a bucket holds.
func (r *reader) readBuckets(c *Config) {
	c.Mode = model.Mode(r.enum("mode", string(model.ModeBucket), string(model.ModeFlat)))
	c.BucketKey = r.storedPaths("bucket_key")
	c.BucketWindow = r.duration("bucket_window", func(d time.Duration) string {
		if d != 0 && day%d != 0 {
			return "must divide 24h evenly so that windows align with UTC days (e.g. 10s, 30s, 1m, 5m, 15m, 1h, 6h, 24h)"
		}
		return ""
	})
	c.BucketMaxRecords = r.integer("bucket_max_records")
	c.BucketMaxBytes = r.size("bucket_max_bytes")
	c.Stats = r.storedPaths("stats")
	c.CountBy = r.storedPaths("count_by")
	c.KeepValues = r.fieldPaths("keep_values")
	c.Indexes = r.indexes("indexes")
	c.IDKey = r.name("id_key", checkIDKey)
	c.IDAction = IDAction(r.enum("id_action", string(IDKeep), string(IDReplace)))
}

// readWrites reads how writes are sent and confirmed, and where records
// that cannot be written go.
func (r *reader) readWrites(c *Config) {
	c.Idempotent = r.boolean("idempotent")
	c.MaxInflight = r.integer("max_inflight")
	c.WriteBatch = r.integer("write_batch")
	c.FlushTimeout = r.duration("flush_timeout", nil)
	c.ConnectTimeout = r.duration("connect_timeout", nil)
	c.DeadLetterCollection = r.deadLetter(c.Collection)
	c.WriteConcern = r.writeConcern()
	if v, set := r.raw("write_journal"); set {
		b, why := parseBool(v)
		if r.check("write_journal", v, why) {
			c.WriteJournal = &b
		}
	}
}

// readParsing reads how the raw line is parsed and fields are typed.
func (r *reader) readParsing(c *Config) {
	c.Parser = ParserKind(r.enum("parser", string(ParserNone), string(ParserApacheCommon),
		string(ParserApacheCombined), string(ParserApacheError), string(ParserNginxAccess),
		string(ParserJSON), string(ParserLogfmt), string(ParserRegex)))
	c.ParseKey = r.name("parse_key", checkNoNUL)
	c.ParseRegex = r.regex("parse_regex")
	c.ParseTimeKey = r.name("parse_time_key", checkNoNUL)
	c.ParseTimeFormat = r.timeFormat("parse_time_format")
	c.TimeFromLog = r.boolean("time_from_log")
	c.Types = r.types("types")
}

// compileParsing builds, once the parsing keys are checked, the line
// parser and the types map the decoder runs with.
func (r *reader) compileParsing(c *Config) {
	for _, k := range []string{"parser", "parse_regex", "parse_time_key", "parse_time_format", "time_from_log", "types"} {
		if r.bad[k] {
			return
		}
	}
	timeFormat, err := parser.ParseTimeFormat(c.ParseTimeFormat)
	if !r.check("parse_time_format", c.ParseTimeFormat, errText(err)) {
		return
	}
	c.Line, err = parser.NewLine(parser.LineConfig{Name: string(c.Parser), Regex: c.ParseRegex,
		TimeKey: c.ParseTimeKey, TimeFormat: timeFormat, Epoch: c.TimeFromLog})
	if !r.check("parser", string(c.Parser), errText(err)) {
		return
	}
	if c.Types != "" {
		c.TypeKinds, err = parser.ParseTypeSpec(c.Types)
		r.check("types", c.Types, errText(err))
	}
}

// errText is err's message, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readFields reads which fields are stored and under which names.
func (r *reader) readFields(c *Config) {
	c.IncludeFields = r.fieldPaths("include_fields")
	c.ExcludeFields = r.fieldPaths("exclude_fields")
	c.KeyReplaceDot = r.name("key_replace_dot", checkReplacement)
	c.KeyReplaceDollar = r.name("key_replace_dollar", checkReplacement)
	c.KeepMetadata = r.boolean("keep_metadata")
	c.TagKey = r.name("tag_key", checkFieldName)
	c.TimeKey = r.name("time_key", checkFieldName)
}

// readRetention reads how long documents are kept and how the collections
// the plugin creates are made.
func (r *reader) readRetention(c *Config) {
	c.TTL = r.duration("ttl", nil)
	c.TTLJitter = r.duration("ttl_jitter", nil) // bounded by ttl in combinations
	c.TTLBurstLimit = int64(r.integer("ttl_burst_limit"))
	c.TTLDeleteRate = r.integer("ttl_delete_rate")
	c.DeadLetterTTL = r.duration("dead_letter_ttl", nil)
	c.Partition = partitionOf(r.enum("partition", partitionName(layout.None), string(layout.Day), string(layout.Week), string(layout.Month)))
	c.PartitionKeep = r.integer("partition_keep")
	c.CappedSize = r.size("capped_size")
	c.CappedMax = int64(r.integer("capped_max"))
	if v, _ := r.raw("compression"); v != "" {
		c.Compression = r.enum("compression", "zstd", "snappy", "zlib", "none")
	}
	c.Validate = r.boolean("validate")
	c.CreateIndexes = r.boolean("create_indexes")
}

// readPlugin reads the plugin's own logging, name and metrics endpoint.
func (r *reader) readPlugin(c *Config) {
	c.PluginLogLevel = LogLevel(r.enum("plugin_log_level", string(LogError), string(LogWarn), string(LogInfo), string(LogDebug)))
	c.InstanceName = r.instanceName("instance_name", " (it is printed inside [...] log prefixes)")
	c.AgentID = r.instanceName("agent_id", "")
	c.MetricsListen = r.name("metrics_listen", checkListen)
	c.LockDir = r.lockDir("lock_dir")
}

// defaultOf is the default of key as the key table gives it.
func defaultOf(key string) string {
	d, _ := lookupKey(key)
	return d.Default
}

// unknownKeys reports keys the Getter holds that no rule reads, when the
// Getter can list them.
func (r *reader) unknownKeys() {
	l, ok := r.g.(Lister)
	if !ok {
		return
	}
	for _, k := range l.Keys() {
		if _, known := lookupKey(k); known || Reserved(k) {
			continue
		}
		why := "unknown key"
		if s := suggest(k); s != "" {
			why += "; did you mean " + s + "?"
		}
		r.errs = append(r.errs, &Error{Key: k, Reason: why, NoValue: true})
	}
}
