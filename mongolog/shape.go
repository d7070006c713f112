package mongolog

// The two shapes of a bucket's key, stats and counts. A configured dotted
// path (bucket_key kubernetes.pod_name, stats http.latency_ms, count_by
// http.status) is stored as the nested fields it names:
// key.kubernetes.pod_name, stats.http.latency_ms.max,
// counts.http.status.200. Versions before stored it as one name, its dots
// replaced by key_replace_dot: key.kubernetes_pod_name,
// stats.http_latency_ms.max. A collection may hold both; every read here
// takes both, and names a field by its configured path.

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// keys are the bucket_key fields, or the tag key without them.
func (r *Reader) keys() []string {
	if len(r.Cfg.BucketKey) == 0 {
		return []string{r.Cfg.TagKey}
	}
	return r.Cfg.BucketKey
}

// grouper is the bucketer of r's configuration, for the key's shape.
func (r *Reader) grouper() *bucketer.Config {
	return &bucketer.Config{KeyPaths: r.Cfg.BucketKey, TagKey: r.Cfg.TagKey,
		ReplaceDot: r.Cfg.KeyReplaceDot, ReplaceDollar: r.Cfg.KeyReplaceDollar}
}

// keyCond is condition c on bucket_key field path as a bucket filter: on
// where the field is stored, or on either of its two places when an
// earlier version stored it elsewhere.
func (r *Reader) keyCond(c Cond, path string) bson.E {
	docs := r.Cfg.Model()
	now, old := docs.KeyPath(path), docs.OldKeyPath(path)
	if now == old {
		return c.filter(now)
	}
	return bson.E{Key: "$or", Value: bson.A{bson.D{c.filter(now)}, bson.D{c.filter(old)}}}
}

// wholeKey is the condition on a bucket's whole key (the lookup index's
// first field) whose fields hold the texts values gives, each key field
// one: the key as the plugin stores it, or as an earlier version did.
func (r *Reader) wholeKey(values map[string]string) bson.E {
	text := func(p string) (bsoncore.Value, bool) {
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, values[p])}, true
	}
	now := bson.Raw(r.grouper().KeyDoc(text))
	var old bson.D
	for _, k := range r.keys() {
		old = append(old, bson.E{Key: r.Cfg.Model().OldName(k), Value: values[k]})
	}
	oldRaw, err := bson.Marshal(old)
	if err != nil || string(oldRaw) == string(now) {
		return bson.E{Key: model.Key, Value: now}
	}
	return bson.E{Key: model.Key, Value: bson.D{{Key: "$in", Value: bson.A{now, bson.Raw(oldRaw)}}}}
}

// Key is bucket d's key in the shape the plugin stores it, also when an
// earlier version stored d (its dotted paths as single names); as stored
// when it holds none of the configured fields either way.
func (r *Reader) Key(d bson.Raw) (bson.Raw, bool) {
	key, ok := d.Lookup(model.Key).DocumentOK()
	if !ok || len(r.Cfg.BucketKey) == 0 {
		return key, ok
	}
	docs, g := r.Cfg.Model(), r.grouper()
	found := false
	value := func(p string) (bsoncore.Value, bool) {
		v, err := key.LookupErr(strings.Split(docs.KeyName(p), ".")...)
		if err != nil {
			v, err = key.LookupErr(docs.OldName(p))
		}
		if err != nil {
			return bsoncore.Value{}, false
		}
		found = true
		return bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}, true
	}
	now := bson.Raw(g.KeyDoc(value))
	if !found {
		return key, true
	}
	return now, true
}

// oldNames maps the single names earlier versions stored the dotted
// paths of stats and count_by under to the paths.
func (r *Reader) oldNames() map[string]string {
	docs := r.Cfg.Model()
	out := map[string]string{}
	for _, f := range append(append([]string(nil), r.Cfg.Stats...), r.Cfg.CountBy...) {
		if o := docs.OldName(f); o != docs.KeyName(f) {
			out[o] = docs.KeyName(f)
		}
	}
	return out
}

// eachStat calls fn with each field bucket d holds stats of, by its path,
// and its statistics {min, max, sum, n}: stats nested by the fields' paths
// (a document with a numeric sum is one field's), or under the names of
// an earlier version (old maps them to their paths).
func eachStat(d bson.Raw, old map[string]string, fn func(field string, s bson.Raw)) {
	stats, _ := d.Lookup(model.Stats).DocumentOK()
	var walk func(doc bson.Raw, prefix string)
	walk = func(doc bson.Raw, prefix string) {
		elems, _ := doc.Elements()
		for _, e := range elems {
			sub, ok := e.Value().DocumentOK()
			if !ok {
				continue
			}
			name := prefix + e.Key()
			if _, numeric := sub.Lookup("sum").AsFloat64OK(); !numeric {
				walk(sub, name+".")
				continue
			}
			if p, ok := old[name]; ok && prefix == "" {
				name = p
			}
			fn(name, sub)
		}
	}
	walk(stats, "")
}

// eachCount calls fn with each count bucket d holds: the counted field's
// path, the value's name and the count. Counts are nested by the fields'
// paths (a document of numbers is one field's counts), or under the names
// of an earlier version (old maps them to their paths).
func eachCount(d bson.Raw, old map[string]string, fn func(field, value string, n int64)) {
	counts, _ := d.Lookup(model.Counts).DocumentOK()
	var walk func(doc bson.Raw, prefix string)
	walk = func(doc bson.Raw, prefix string) {
		elems, _ := doc.Elements()
		for _, e := range elems {
			sub, ok := e.Value().DocumentOK()
			if !ok {
				continue
			}
			name := prefix + e.Key()
			vals, _ := sub.Elements()
			if len(vals) > 0 && vals[0].Value().Type == bson.TypeEmbeddedDocument {
				walk(sub, name+".")
				continue
			}
			if p, ok := old[name]; ok && prefix == "" {
				name = p
			}
			for _, v := range vals {
				if n, ok := v.Value().AsInt64OK(); ok {
					fn(name, v.Key(), n)
				}
			}
		}
	}
	walk(counts, "")
}

// oldIndexes warns of the fields of c's indexes that name a dotted
// bucket_key, stats or count_by path where versions before nested paths
// stored it: such an index serves only the buckets those versions wrote.
func oldIndexes(c *conf.Config) []string {
	if c.Mode == model.ModeFlat {
		return nil
	}
	docs := c.Model()
	type moved struct{ old, now, key, path string }
	var paths []moved
	for _, k := range c.BucketKey {
		paths = append(paths, moved{docs.OldKeyPath(k), docs.KeyPath(k), "bucket_key", k})
	}
	for _, s := range c.Stats {
		paths = append(paths, moved{model.Stats + "." + docs.OldName(s), model.Stats + "." + docs.KeyName(s), "stats", s})
	}
	for _, f := range c.CountBy {
		paths = append(paths, moved{model.Counts + "." + docs.OldName(f), model.Counts + "." + docs.KeyName(f), "count_by", f})
	}
	var out []string
	for _, ix := range c.Indexes {
		for _, f := range ix {
			for _, m := range paths {
				if m.old == m.now || f.Path != m.old && !strings.HasPrefix(f.Path, m.old+".") {
					continue
				}
				out = append(out, fmt.Sprintf("indexes %s: %s %s is stored nested, at %s; %s is where versions before stored it, so the index serves only their buckets (index %s%s)",
					f.Path, m.key, m.path, m.now, m.old, m.now, f.Path[len(m.old):]))
			}
		}
	}
	return out
}
