package conf

// The keys whose values are lists with rules of their own: shard_key and
// ttl_rules.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

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
