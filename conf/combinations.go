package conf

// The rules between keys: what one setting needs of, or rules out for,
// another, checked once every key is read.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
)

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
