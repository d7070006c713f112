package conf

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

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
	c.BucketKey = r.fieldPaths("bucket_key")
	c.BucketWindow = r.duration("bucket_window", func(d time.Duration) string {
		if d != 0 && day%d != 0 {
			return "must divide 24h evenly so that windows align with UTC days (e.g. 10s, 30s, 1m, 5m, 15m, 1h, 6h, 24h)"
		}
		return ""
	})
	c.BucketMaxRecords = r.integer("bucket_max_records")
	c.BucketMaxBytes = r.size("bucket_max_bytes")
	c.Stats = r.fieldPaths("stats")
	c.CountBy = r.fieldPaths("count_by")
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
}

// reader reads keys from a Getter and collects errors.
type reader struct {
	g    Getter
	errs []error
	set  map[string]string // keys the user gave, with their trimmed value
	bad  map[string]bool   // keys whose value was rejected
}

// raw returns the trimmed value of key, or its default from the key table
// when unset; set reports whether the user gave it.
func (r *reader) raw(key string) (value string, set bool) {
	d, ok := lookupKey(key)
	if !ok {
		r.errs = append(r.errs, &Error{Key: key, Reason: "internal error: key missing from the key table", NoValue: true})
		return "", false
	}
	v := strings.TrimSpace(r.g.Get(key))
	if v == "" {
		return d.Default, false
	}
	r.set[key] = v
	return v, true
}

// invalid records `<key>: invalid value "<value>": <reason>`. A value that
// may be a connection string is redacted.
func (r *reader) invalid(key, value, reason string) {
	if key == "uri" || strings.Contains(value, "://") ||
		(strings.HasPrefix(key, "uri_") && strings.Contains(value, "@")) {
		value = RedactURI(value)
	}
	r.bad[key] = true
	r.errs = append(r.errs, &Error{Key: key, Value: value, Reason: reason})
}

// check records an error when why is not empty and reports whether the value is good.
func (r *reader) check(key, value, why string) bool {
	if why != "" {
		r.invalid(key, value, why)
		return false
	}
	return true
}

func (r *reader) name(key string, valid func(string) string) string {
	v, _ := r.raw(key)
	if !r.check(key, v, valid(v)) {
		return ""
	}
	return v
}

func (r *reader) enum(key string, allowed ...string) string {
	v, _ := r.raw(key)
	l := strings.ToLower(v)
	if slices.Contains(allowed, l) {
		return l
	}
	r.invalid(key, v, "must be one of "+strings.Join(allowed, ", "))
	return ""
}

func (r *reader) boolean(key string) bool {
	v, _ := r.raw(key)
	b, why := parseBool(v)
	r.check(key, v, why)
	return b
}

// integer reads a whole number within the key's range (see ranges).
func (r *reader) integer(key string) int {
	v, _ := r.raw(key)
	n, why := parseInt(v)
	if b, ok := ranges[key]; ok && (why != "" || !b.holds(n)) {
		why = b.message() // the range says more than "not a whole number"
	}
	if !r.check(key, v, why) {
		return 0
	}
	return int(n)
}

// duration reads a duration within the key's range (see ranges); more, when
// not nil, checks a value within it.
func (r *reader) duration(key string, more func(time.Duration) string) time.Duration {
	v, _ := r.raw(key)
	d, why := parseDuration(v)
	if b, ok := ranges[key]; why == "" && ok && !b.holds(int64(d)) {
		why = b.message()
	}
	if why == "" && more != nil {
		why = more(d)
	}
	if !r.check(key, v, why) {
		return 0
	}
	return d
}

// size reads a size within the key's range (see ranges).
func (r *reader) size(key string) int64 {
	v, _ := r.raw(key)
	n, why := parseSize(v)
	if b, ok := ranges[key]; why == "" && ok && !b.holds(n) {
		why = b.message()
	}
	if !r.check(key, v, why) {
		return 0
	}
	return n
}

// indexes reads a list of index specifications: fields joined by +, each
// optionally :1 or :-1.
func (r *reader) indexes(key string) []Index {
	v, _ := r.raw(key)
	if v == "" {
		return nil
	}
	list, why := parseList(v)
	var out []Index
	for _, item := range list {
		if why != "" {
			break
		}
		var ix Index
		for _, part := range strings.Split(item, "+") {
			path, order, hasOrder := strings.Cut(strings.TrimSpace(part), ":")
			f := IndexField{Path: path, Order: 1}
			switch {
			case hasOrder && order == "-1":
				f.Order = -1
			case hasOrder && order != "1":
				why = strconv.Quote(part) + ": the order is 1 or -1"
			}
			if w := checkFieldPath(path); why == "" && w != "" {
				why = strconv.Quote(path) + " " + w
			}
			ix = append(ix, f)
		}
		out = append(out, ix)
	}
	if !r.check(key, v, why) {
		return nil
	}
	return out
}

func (r *reader) fieldPaths(key string) []string {
	v, _ := r.raw(key)
	if v == "" {
		return nil
	}
	list, why := parseList(v)
	if why == "" {
		for _, p := range list {
			if why = checkFieldPath(p); why != "" {
				why = strconv.Quote(p) + " " + why
				break
			}
		}
	}
	if !r.check(key, v, why) {
		return nil
	}
	return list
}

// uri resolves the connection string from exactly one of uri, uri_file, uri_env.
func (r *reader) uri(env func(string) string, readFile func(string) ([]byte, error)) (uri, source string) {
	literal, literalSet := r.raw("uri")
	file, fileSet := r.raw("uri_file")
	envName, envSet := r.raw("uri_env")

	var given []string
	for _, k := range []struct {
		key string
		set bool
	}{{"uri", literalSet}, {"uri_file", fileSet}, {"uri_env", envSet}} {
		if k.set {
			given = append(given, k.key)
		}
	}
	if len(given) == 0 {
		r.bad["uri"] = true
		r.errs = append(r.errs, &Error{Key: "uri", NoValue: true,
			Reason: "required: set uri (or uri_file, or uri_env) to a MongoDB connection string such as mongodb://localhost:27017"})
		return "", ""
	}
	// The first source given is validated; the others are only reported as
	// conflicts (their file or variable is not read).
	for _, k := range given[1:] {
		r.invalid(k, r.set[k], "conflicts with "+given[0]+"; give exactly one of uri, uri_file or uri_env")
	}
	var ok bool
	switch given[0] {
	case "uri":
		uri, ok = literal, r.check("uri", literal, checkURI(literal))
	case "uri_file":
		uri, ok = r.uriFromFile(file, readFile)
	default:
		uri, ok = r.uriFromEnv(envName, env)
	}
	if !ok || len(given) > 1 {
		return "", ""
	}
	return uri, given[0]
}

func (r *reader) uriFromFile(path string, readFile func(string) ([]byte, error)) (string, bool) {
	if strings.Contains(path, "://") {
		r.invalid("uri_file", path, "looks like a connection string; uri_file takes the path of a file holding one (use uri for the string itself)")
		return "", false
	}
	data, err := readFile(path)
	if err != nil {
		// The path is already in the message: keep only the cause, so that a
		// connection string given as a path is not repeated unredacted.
		why := err.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			why = pe.Err.Error()
		}
		r.invalid("uri_file", path, "cannot read the file: "+strings.ReplaceAll(why, path, RedactURI(path)))
		return "", false
	}
	return r.uriContent("uri_file", path, "the file", strings.TrimSpace(string(data)))
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (r *reader) uriFromEnv(name string, env func(string) string) (string, bool) {
	if !envNameRE.MatchString(name) {
		why := "not an environment variable name (letters, digits and _, not starting with a digit)"
		if strings.Contains(name, "://") {
			why = "looks like a connection string; uri_env takes the name of an environment variable holding one (use uri for the string itself)"
		}
		r.invalid("uri_env", name, why)
		return "", false
	}
	return r.uriContent("uri_env", name, "the environment variable", strings.TrimSpace(env(name)))
}

// uriContent validates a connection string read from a file or the
// environment. Content that does not even start like a connection string is
// not shown: it may be a bare password.
func (r *reader) uriContent(key, value, where, content string) (string, bool) {
	if content == "" {
		r.invalid(key, value, where+" is empty or not set")
		return "", false
	}
	why := checkURI(content)
	if why == "" {
		return content, true
	}
	if strings.HasPrefix(content, schemeMongoDB) || strings.HasPrefix(content, schemeSRV) {
		r.invalid(key, value, where+" holds an invalid connection string "+strconv.Quote(RedactURI(content))+": "+why)
	} else {
		r.invalid(key, value, where+" does not hold a MongoDB connection string: it must start with mongodb:// or mongodb+srv:// (content not shown)")
	}
	return "", false
}

func (r *reader) deadLetter(collection string) string {
	v, set := r.raw("dead_letter_collection")
	if !set {
		if collection == "" { // collection was rejected: no default to derive
			return ""
		}
		v = derivedDeadLetter(collection)
		if why := checkTemplate(v); why != "" {
			r.invalid("dead_letter_collection", v, why+" (this default is derived from collection; set dead_letter_collection)")
			return ""
		}
		return v
	}
	switch strings.ToLower(v) {
	case "off", "none", "no", "false", "0", "disabled", "disable":
		r.invalid("dead_letter_collection", v, "cannot be disabled: records MongoDB rejects must be kept somewhere; give a collection name")
		return ""
	}
	if !r.check("dead_letter_collection", v, checkTemplate(v)) {
		return ""
	}
	return v
}

func (r *reader) writeConcern() WriteConcern {
	v, set := r.raw("write_concern")
	if !set {
		return WriteConcern{}
	}
	if strings.EqualFold(v, "majority") {
		return WriteConcern{Majority: true}
	}
	members := ranges["write_concern"]
	n, why := parseInt(v)
	switch {
	case why == "" && n == 0:
		why = "unacknowledged writes cannot guarantee delivery (the plugin acknowledges a chunk only after MongoDB confirms the write); use majority or " + members.text()
	case why == "" && members.holds(n):
		return WriteConcern{W: int(n)}
	default:
		why = "must be majority or a number of members " + members.text() + " (tag sets are not supported)"
	}
	r.invalid("write_concern", v, why)
	return WriteConcern{}
}

func (r *reader) regex(key string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	re, err := regexp.Compile(v)
	if err != nil {
		r.invalid(key, v, "does not compile: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return ""
	}
	seen := map[string]bool{}
	for _, n := range re.SubexpNames() {
		if n == "" {
			continue
		}
		if seen[n] {
			r.invalid(key, v, "names the group "+strconv.Quote(n)+" twice")
			return ""
		}
		seen[n] = true
	}
	if len(seen) == 0 {
		r.invalid(key, v, "has no named group; name the fields with (?P<name>...)")
		return ""
	}
	return v
}

// timeFormat checks a strptime-style time format; unset is the default.
func (r *reader) timeFormat(key string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	if _, err := parser.ParseTimeFormat(v); err != nil {
		r.invalid(key, v, err.Error())
		return ""
	}
	return v
}

// types checks "field:kind,..." by the decoder's own grammar
// (parser.ParseTypeEntry) and field paths as every path key, and keeps the
// text as written.
func (r *reader) types(key string) string {
	v, _ := r.raw(key)
	if v == "" {
		return ""
	}
	list, why := parseList(v)
	seen := map[string]bool{}
	for _, item := range list {
		if why != "" {
			break
		}
		field, _, err := parser.ParseTypeEntry(item)
		switch {
		case err != nil:
			why = err.Error()
		case checkFieldPath(field) != "":
			why = strconv.Quote(item) + ": field " + checkFieldPath(field)
		case seen[field]:
			why = "field " + strconv.Quote(field) + " is given twice"
		}
		seen[field] = true
	}
	if !r.check(key, v, why) {
		return ""
	}
	return v
}

func (r *reader) instanceName(key, why string) string {
	v, set := r.raw(key)
	if !set {
		return ""
	}
	for _, c := range v {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == ']' {
			r.invalid(key, v, "must not contain spaces, control characters or ']'"+why)
			return ""
		}
	}
	return v
}

// shardKey reads shard_key, which depends on the mode and the bucket key.
func (r *reader) shardKey(c *Config) []ShardField {
	v, _ := r.raw("shard_key")
	switch strings.ToLower(v) {
	case "none":
		return nil
	case "hashed_id":
		return []ShardField{{Name: model.ID, Hashed: true}}
	}
	if c.Mode == model.ModeFlat {
		r.invalid("shard_key", v, "mode flat shards only on a hashed _id (its _id grows with time and would make one shard hot): use none or hashed_id")
		return nil
	}
	keyFields := bucketKeyFields(c)
	if strings.EqualFold(v, "key_start") {
		var out []ShardField
		for _, f := range keyFields {
			out = append(out, ShardField{Name: f})
		}
		if c.BucketWindow > 0 {
			out = append(out, ShardField{Name: model.Start})
		}
		return out
	}
	list, why := parseList(v)
	var out []ShardField
	hashed := 0
	for _, item := range list {
		name, suffix, isHashed := strings.Cut(item, ":")
		switch {
		case isHashed && suffix != "hashed":
			why = strconv.Quote(item) + ": the only suffix is :hashed"
		case name == model.Start && c.BucketWindow == 0:
			why = "start needs a bucket_window (bucket_window is 0: buckets have no start)"
		case name != model.ID && name != model.Start && !slices.Contains(keyFields, name):
			why = strconv.Quote(name) + " is not _id, start or a bucket_key field (" + strings.Join(keyFields, ",") + "): the update filter names only those"
		}
		if isHashed {
			hashed++
		}
		out = append(out, ShardField{Name: name, Hashed: isHashed})
	}
	if why == "" && hashed > 1 {
		why = "at most one field can be hashed"
	}
	if why == "" && out[0].Name == model.Start {
		why = "a key that starts with start sends every new write to the shard holding the newest windows; put a key field (or _id) first"
	}
	if why != "" {
		r.invalid("shard_key", v, why+"; allowed: none, hashed_id, key_start, or a list of _id, start and bucket_key fields")
		return nil
	}
	return out
}

// bucketKeyFields are the fields of a bucket's key: bucket_key, or the tag
// when it is empty.
func bucketKeyFields(c *Config) []string {
	if len(c.BucketKey) == 0 {
		return []string{c.TagKey}
	}
	return c.BucketKey
}

// ttlRules reads ttl_rules: every malformed rule is reported at once.
func (r *reader) ttlRules(c *Config) []TTLRule {
	v, _ := r.raw("ttl_rules")
	if v == "" {
		return nil
	}
	list, why := parseList(v)
	if why != "" {
		r.invalid("ttl_rules", v, why)
		return nil
	}
	keyFields := bucketKeyFields(c)
	var rules []TTLRule
	var whys []string
	for _, item := range list {
		match, dur, okDur := strings.Cut(item, ":")
		// The duration follows the last colon: values may hold colons.
		if i := strings.LastIndexByte(item, ':'); i >= 0 {
			match, dur = item[:i], item[i+1:]
		}
		field, value, okEq := strings.Cut(match, "=")
		field, value, dur = strings.TrimSpace(field), strings.TrimSpace(value), strings.TrimSpace(dur)
		d, durWhy := parseDuration(dur)
		switch {
		case !okDur || !okEq || field == "":
			whys = append(whys, strconv.Quote(item)+": not field=value:duration")
		case durWhy != "":
			whys = append(whys, strconv.Quote(item)+": "+durWhy)
		case !ranges["ttl"].inSpan(int64(d)):
			whys = append(whys, strconv.Quote(item)+": duration must be "+ranges["ttl"].span())
		case c.Mode == model.ModeBucket && !slices.Contains(keyFields, field):
			whys = append(whys, strconv.Quote(field)+" is not a bucket_key field ("+strings.Join(keyFields, ",")+"): a bucket's rule can only read its key")
		case c.Mode == model.ModeFlat && (strings.ContainsAny(field, ".\x00") || strings.HasPrefix(field, "$")):
			whys = append(whys, strconv.Quote(field)+" is not a top-level field name")
		default:
			rules = append(rules, TTLRule{Field: field, Value: value, TTL: d})
		}
	}
	if len(whys) == 0 && c.TTL == 0 {
		whys = append(whys, "needs ttl (ttl is 0, off): rules shift expiry relative to ttl's TTL index")
	}
	if len(whys) > 0 {
		r.invalid("ttl_rules", v, strings.Join(whys, "; "))
		return nil
	}
	return rules
}

// combinations checks rules that involve several keys. A key whose own value
// was rejected is not checked again. The checks run in this order, which is
// the order of their errors.
func (r *reader) combinations(c *Config) {
	r.flatHasNoBuckets(c)
	r.idKeyNeeds(c)
	r.retentionNeeds(c)
	if r.good("shard_key", "mode", "bucket_key", "bucket_window", "tag_key") {
		c.ShardKey = r.shardKey(c)
	}
	r.cappedConflicts(c)
	r.parsingCombinations(c)
	r.fieldCombinations(c)
	if r.good("database", "collection") {
		r.namespaceLengths(c)
		r.deadLetterName(c)
	}
	r.targets(c)
}

// good reports whether none of keys had its own value rejected.
func (r *reader) good(keys ...string) bool {
	for _, k := range keys {
		if r.bad[k] {
			return false
		}
	}
	return true
}

// flatHasNoBuckets refuses the bucket keys in mode flat.
func (r *reader) flatHasNoBuckets(c *Config) {
	if !r.good("mode") || c.Mode != model.ModeFlat {
		return
	}
	for _, k := range []string{"bucket_key", "bucket_window", "bucket_max_records", "bucket_max_bytes", "stats", "count_by", "keep_values"} {
		if v, set := r.set[k]; set && r.good(k) {
			r.invalid(k, v, "mode flat has no buckets; remove "+k+" or set mode bucket")
		}
	}
}

// idKeyNeeds checks id_key against the mode and the fields stored, and
// id_action against id_key.
func (r *reader) idKeyNeeds(c *Config) {
	if v, set := r.set["id_action"]; set && r.good("id_action", "id_key") && c.IDKey == "" && v != defaultOf("id_action") {
		r.invalid("id_action", v, "needs id_key (without it every document has the plugin's own _id)")
	}
	if r.good("id_action", "capped_size") && c.IDAction == IDReplace && c.CappedSize > 0 {
		r.invalid("id_action", r.set["id_action"], "cannot be combined with capped_size (MongoDB refuses a replacement that changes a document's size in a capped collection)")
	}
	if c.IDKey == "" || !r.good("id_key") {
		return
	}
	k := c.IDKey
	var why string
	switch {
	case r.good("mode") && c.Mode != model.ModeFlat:
		why = "needs mode flat (a bucket holds many records under one _id; mode is " + string(c.Mode) + ")"
	case r.good("tag_key") && k == c.TagKey:
		why = "is tag_key, the field the plugin writes the tag to (a record's own " + k + " is stored as _" + k + ")"
	case r.good("time_key") && k == c.TimeKey:
		why = "is time_key, the field the plugin writes the record time to (a record's own " + k + " is stored as _" + k + ")"
	case r.good("exclude_fields") && slices.Contains(c.ExcludeFields, k):
		why = "is in exclude_fields, so no stored record has it"
	case r.good("include_fields") && len(c.IncludeFields) > 0 && !slices.Contains(c.IncludeFields, k):
		why = "is not in include_fields (" + strings.Join(c.IncludeFields, ",") + "), so no stored record has it"
	}
	if why != "" {
		r.invalid("id_key", k, why)
	}
}

// retentionNeeds checks the retention keys that need another one, and
// reads ttl_rules, which depends on ttl, the mode and the bucket key.
func (r *reader) retentionNeeds(c *Config) {
	if r.good("ttl", "ttl_jitter") && c.TTLJitter > 0 {
		if c.TTL == 0 {
			r.invalid("ttl_jitter", r.set["ttl_jitter"], "needs ttl (ttl is 0, off)")
		} else if c.TTLJitter > c.TTL {
			r.invalid("ttl_jitter", r.set["ttl_jitter"], "must not exceed ttl ("+formatDuration(c.TTL)+")")
		}
	}
	if r.good("partition", "partition_keep") && c.PartitionKeep > 0 && c.Partition == layout.None {
		r.invalid("partition_keep", r.set["partition_keep"], "needs partition day, week or month (partition is none)")
	}
	if r.good("ttl", "mode", "bucket_key", "tag_key") {
		c.TTLRules = r.ttlRules(c)
	}
	if r.good("capped_max", "capped_size") && c.CappedMax > 0 && c.CappedSize == 0 {
		r.invalid("capped_max", r.set["capped_max"], "needs capped_size (MongoDB caps a collection by size first)")
	}
}

// cappedConflicts refuses a capped collection with what it cannot have.
func (r *reader) cappedConflicts(c *Config) {
	if !r.good("capped_size") || c.CappedSize == 0 {
		return
	}
	v := r.set["capped_size"]
	if r.good("ttl") && c.TTL > 0 {
		r.invalid("capped_size", v, "cannot be combined with ttl (capped collections cannot have TTL indexes)")
	}
	if r.good("partition") && c.Partition != layout.None {
		r.invalid("capped_size", v, "cannot be combined with partition "+string(c.Partition)+" (partition collections are not capped)")
	}
	if r.good("mode") && c.Mode == model.ModeBucket {
		r.invalid("capped_size", v, "needs mode flat (documents in a capped collection cannot grow, and buckets grow)")
	}
}

// parsingCombinations checks the parse_* keys and time_from_log against
// the parser.
func (r *reader) parsingCombinations(c *Config) {
	if r.good("parser", "parse_regex") {
		if v, set := r.set["parse_regex"]; set && c.Parser != ParserRegex {
			r.invalid("parse_regex", v, "only used with parser regex (parser is "+string(c.Parser)+")")
		}
		if c.Parser == ParserRegex && c.ParseRegex == "" {
			r.bad["parse_regex"] = true
			r.errs = append(r.errs, &Error{Key: "parse_regex", NoValue: true,
				Reason: "required with parser regex: a Go regular expression with named groups, e.g. ^(?P<level>\\w+) (?P<msg>.*)$"})
		}
	}
	if r.good("parser") && c.Parser != ParserJSON && c.Parser != ParserLogfmt {
		for _, k := range []string{"parse_time_key", "parse_time_format"} {
			// The default written out is allowed, as everywhere.
			if v, set := r.set[k]; set && r.good(k) && v != defaultOf(k) {
				r.invalid(k, v, "only used with parser json or logfmt (parser is "+string(c.Parser)+
					"): regex reads the time from its group named time, the other parsers from their own time field")
			}
		}
	}
	if r.good("parser", "parse_regex", "time_from_log") && c.TimeFromLog {
		if why := noLineTime(c); why != "" {
			r.invalid("time_from_log", r.set["time_from_log"], why)
		}
	}
}

// fieldCombinations checks the field selection and the names the plugin
// writes against each other.
func (r *reader) fieldCombinations(c *Config) {
	if r.good("include_fields", "exclude_fields") {
		for _, p := range c.ExcludeFields {
			if slices.Contains(c.IncludeFields, p) {
				r.invalid("exclude_fields", r.set["exclude_fields"], strconv.Quote(p)+" is also in include_fields")
				break
			}
		}
	}
	if r.good("tag_key", "time_key") && c.TagKey == c.TimeKey {
		r.invalid("time_key", c.TimeKey, "must differ from tag_key")
	}
}

// namespaceLengths checks the collection's name with any partition suffix
// against MongoDB's limits.
func (r *reader) namespaceLengths(c *Config) {
	if isTemplate(c.Collection) {
		return // every resolved name is fitted (see naming.Template.Resolve)
	}
	dbLen := len(c.Database)
	if isTemplate(c.Database) {
		dbLen = naming.MaxDatabaseBytes
	}
	longest := c.Collection
	if r.good("partition") && c.Partition != layout.None {
		suffix := c.Partition.Suffix()
		longest = c.Collection + suffix
		if len(longest) > naming.MaxCollectionBytes {
			r.invalid("collection", c.Collection, "too long for partition "+string(c.Partition)+": "+
				"<collection>"+suffix+" must be at most 200 bytes")
		}
	}
	if dbLen+1+len(longest) > naming.MaxNamespaceBytes {
		r.invalid("collection", c.Collection, "<database>.<collection> (with any partition suffix) must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)")
	}
}

// deadLetterName checks the dead letter collection against the collection
// and its partitions. A derived name is not checked when collection failed.
func (r *reader) deadLetterName(c *Config) {
	if !r.good("collection", "dead_letter_collection") || c.DeadLetterCollection == "" {
		return
	}
	dl := c.DeadLetterCollection
	dlValue := r.set["dead_letter_collection"]
	if dlValue == "" {
		dlValue = dl
	}
	switch {
	case dl == c.Collection:
		r.invalid("dead_letter_collection", dlValue, "must differ from collection")
	case r.good("partition") && c.Partition != layout.None && layout.IsPartition(dl, c.Collection, c.Partition):
		r.invalid("dead_letter_collection", dlValue, "looks like a partition of collection and could be dropped with it; choose another name")
	case isTemplate(dl) || isTemplate(c.Database):
		// Fitted when resolved.
	case len(c.Database)+1+len(dl) > naming.MaxNamespaceBytes:
		r.invalid("dead_letter_collection", dlValue, "<database>.<dead_letter_collection> must be at most 235 bytes (MongoDB takes 255, servers on DocumentDB 235)")
	}
}

// defaultOf is the default of key as the key table gives it.
func defaultOf(key string) string {
	d, _ := lookupKey(key)
	return d.Default
}

// lineTimeParsers says which parsers give a time, for messages.
const lineTimeParsers = "apache_common, apache_combined, apache_error, nginx_access, json and logfmt (the time under parse_time_key), or regex with a group named time"

// noLineTime is why time_from_log cannot be on with c's parser, or "" when
// the parser gives the line's time: the parser itself says.
func noLineTime(c *Config) string {
	p, err := parser.NewLine(parser.LineConfig{Name: string(c.Parser), Regex: c.ParseRegex})
	switch {
	case err != nil:
		return "" // reported with the parser's own keys
	case p == nil:
		return "needs a parser that gives the line's time (parser is none): " + lineTimeParsers
	case p.TimeKey() == "":
		return "parser " + string(c.Parser) + " gives no time here: parse_regex has no group named time; " +
			"name the group holding the line's time (?P<time>...), or use " + lineTimeParsers
	}
	return ""
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

// Name rules. Each returns "" when valid, else the reason.

func checkDatabase(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > naming.MaxDatabaseBytes:
		return "must be shorter than 64 bytes"
	case strings.ContainsAny(s, "/\\. \"$\x00"):
		return "must not contain / \\ . space \" $ or NUL"
	}
	return ""
}

func checkCollection(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > naming.MaxCollectionBytes:
		return "must be at most 200 bytes"
	case strings.ContainsAny(s, "$\x00"):
		return "must not contain $ or NUL"
	case strings.HasPrefix(s, "system."):
		return "must not start with system. (reserved by MongoDB)"
	}
	return ""
}

// checkFieldPath checks a dotted path such as kubernetes.pod_name.
func checkFieldPath(p string) string {
	if strings.ContainsRune(p, 0) {
		return "must not contain NUL"
	}
	if slices.Contains(strings.Split(p, "."), "") {
		return "has an empty path segment (write a.b, not a..b, .a or a.)"
	}
	return ""
}

// checkNoNUL checks a field name read as written (parse_key, parse_time_key).
func checkNoNUL(s string) string {
	if strings.ContainsRune(s, 0) {
		return "must not contain NUL"
	}
	return ""
}

// checkListen checks the host:port of the metrics endpoint; "" is none.
func checkListen(v string) string {
	if v == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return "must be host:port with a port from 1 to 65535, e.g. 127.0.0.1:2021"
	}
	return ""
}

// checkFieldName checks a top-level field name the plugin writes.
func checkFieldName(s string) string {
	if s == model.ID {
		return "_id is the document id"
	}
	return checkReplacement(s)
}

// checkIDKey checks id_key: "" (off) or a top-level field name as stored.
func checkIDKey(s string) string {
	switch {
	case s == model.ID:
		return "a record's own _id field is stored as __id: name that field (__id) instead"
	case strings.Contains(s, "."):
		return "must be a top-level field name: nested paths are not supported, and a field named with a '.' is stored with key_replace_dot in its place"
	case strings.HasPrefix(s, "$"):
		return "must not start with '$' (a leading '$' in a field name is stored as key_replace_dollar)"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	}
	return ""
}

// checkReplacement checks a replacement for '.' or a leading '$' in field names.
func checkReplacement(s string) string {
	switch {
	case strings.Contains(s, "."):
		return "must not contain '.'"
	case strings.HasPrefix(s, "$"):
		return "must not start with '$'"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	}
	return ""
}

// partitionName is how the partition key writes period p: "none" for
// layout.None.
func partitionName(p layout.Period) string {
	if p == layout.None {
		return "none"
	}
	return string(p)
}

// partitionOf is the period the partition key's value v names.
func partitionOf(v string) layout.Period {
	if v == partitionName(layout.None) {
		return layout.None
	}
	return layout.Period(v)
}
