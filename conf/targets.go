package conf

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/naming"
)

// Targets are database, collection and dead_letter_collection parsed as
// templates (see package naming). A name without a placeholder is a static
// template: its name is the text itself.
type Targets struct {
	Database, Collection, DeadLetter *naming.Template
}

// Templated reports whether a record's database, collection or
// dead-letter collection depends on its tag or fields.
func (t Targets) Templated() bool {
	return t.Database != nil && !(t.Database.Static() && t.Collection.Static() && t.DeadLetter.Static())
}

// isTemplate reports whether a name is written as a template.
func isTemplate(v string) bool { return strings.Contains(v, "$") }

// derivedDeadLetter is the default dead_letter_collection of c:
// <collection>_dead, its suffix kept literal when collection is a template
// ("k_$ns" gives "k_$['ns']_dead", not the field ns_dead).
func (c *Config) derivedDeadLetter() string {
	if t := c.Targets.Collection; t != nil && !t.Static() {
		return t.Suffixed(deadLetterSuffix)
	}
	return c.Collection + deadLetterSuffix
}

// templateName reads a database or collection name: a template when it
// holds a '$' (its syntax checked by parse), else a name checked by valid.
func (r *reader) templateName(key string, valid func(string) string, parse func(string) (*naming.Template, error)) string {
	v, _ := r.raw(key)
	if isTemplate(v) {
		t, err := parse(v)
		if err != nil {
			r.invalid(key, v, "template: "+err.Error())
			return ""
		}
		r.keep(key, t)
		return v
	}
	if !r.check(key, v, valid(v)) {
		return ""
	}
	return v
}

// collectionOrTemplate checks the value v of key: a collection name, or a
// collection template's syntax, the template kept.
func (r *reader) collectionOrTemplate(key, v string) string {
	if !isTemplate(v) {
		return checkCollection(v)
	}
	t, err := naming.Parse(v)
	if err != nil {
		return "template: " + err.Error()
	}
	r.keep(key, t)
	return ""
}

// keep keeps the template t parsed from key's value.
func (r *reader) keep(key string, t *naming.Template) {
	if r.parsed == nil {
		r.parsed = map[string]*naming.Template{}
	}
	r.parsed[key] = t
}

// targetValue reads target_missing or target_overflow: text that a name
// can hold as it is.
func (r *reader) targetValue(key string) string {
	v, _ := r.raw(key)
	why := ""
	switch {
	case v == "":
		why = "must not be empty"
	case len(v) > 64:
		why = "must be at most 64 bytes"
	case strings.ContainsFunc(v, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-')
	}):
		why = "must hold only letters, digits, _ and - (it becomes part of a database or collection name)"
	}
	if !r.check(key, v, why) {
		return ""
	}
	return v
}

// targets parses the three names into c.Targets, once they and partition
// are valid: a collection template leaves room for the partition suffix.
func (r *reader) targets(c *Config) {
	if !r.good("database", "collection", "dead_letter_collection", "partition", "target_missing") || c.DeadLetterCollection == "" {
		return
	}
	parse := func(key, v string, parse func(string) (*naming.Template, error)) *naming.Template {
		if t := r.parsed[key]; t != nil {
			return t
		}
		t, err := parse(v)
		if err != nil {
			r.invalid(key, v, err.Error())
		}
		return t
	}
	db := parse("database", c.Database, naming.ParseDatabase)
	coll := parse("collection", c.Collection, naming.Parse)
	dl := parse("dead_letter_collection", c.DeadLetterCollection, naming.Parse)
	if db == nil || coll == nil || dl == nil {
		return
	}
	if f := unboundField(dl, db, coll); f != "" {
		r.invalid("dead_letter_collection", r.set["dead_letter_collection"], "reads the field "+f+
			", which neither database nor collection reads: a dead-letter collection may name only fields of its record's target, so that target_limit bounds it too")
		return
	}
	if db.Static() && coll.Static() && dl.Static() {
		r.targetKeysUnused()
	}
	for _, t := range []*naming.Template{db, coll, dl} {
		t.Missing = c.TargetMissing
	}
	if odb, _ := (naming.Pair{Database: db, Collection: coll}).OverflowedAll(c.TargetOverflow); naming.Reserved(odb) && r.good("target_overflow") {
		r.invalid("target_overflow", c.TargetOverflow, fmt.Sprintf("makes the overflow target's database %s (database %s), one of MongoDB's own (admin, local and config are reserved): choose another value", odb, c.Database))
		return
	}
	if c.Partition != layout.None {
		coll.Reserve = len(c.Partition.Suffix())
	}
	c.Targets = Targets{Database: db, Collection: coll, DeadLetter: dl}
}

// targetKeysUnused refuses a target_ key set to other than its default
// when no name is a template, where it would do nothing.
func (r *reader) targetKeysUnused() {
	for _, k := range []string{"target_missing", "target_overflow", "target_limit"} {
		if v, set := r.set[k]; set && r.good(k) && v != defaultOf(k) {
			r.invalid(k, v, "needs a template in database, collection or dead_letter_collection (all three are fixed names, so there is one target)")
		}
	}
}

// unboundField is a field dl reads that neither db nor coll does, written
// as in a template ($['a']['b']), or "".
func unboundField(dl, db, coll *naming.Template) string {
	known := append(db.Fields(), coll.Fields()...)
	for _, f := range dl.Fields() {
		if !slices.ContainsFunc(known, func(k []string) bool { return slices.Equal(k, f) }) {
			var b strings.Builder
			b.WriteByte('$')
			for _, k := range f {
				b.WriteString("['" + strings.ReplaceAll(k, "'", "''") + "']")
			}
			return b.String()
		}
	}
	return ""
}
