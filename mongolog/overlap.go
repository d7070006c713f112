package mongolog

import (
	"fmt"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/fbconf"
)

// writes is where one mongodb output writes, as its configuration names it.
type writes struct {
	out                  fbconf.Section
	name                 string // how a line names the output
	uri, db, coll, match string
}

// overlaps are the warnings for pairs of outputs that write the same
// collection of the same server (as written: the same uri, database and
// collection, templates included) with Match patterns one tag can meet
// both of: each such record is stored once by each output.
func overlaps(outs []writes) []string {
	var out []string
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			if a.uri != b.uri || a.db != b.db || a.coll != b.coll || !globsMeet(a.match, b.match) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: output %s and %s: output %s both write %s.%s with Match %q and %q, which a tag can meet both of: its records are stored twice; narrow one Match or name another collection",
				a.out.Where(), a.name, b.out.Where(), b.name, a.db, a.coll, a.match, b.match))
		}
	}
	return out
}

// writesOf is output o of configuration c as the writes it makes; ok is false when o has
// no Match (it takes no records, or takes them by Match_Regex, which is not
// compared).
func writesOf(o fbconf.Section, name string, c *conf.Config) (s writes, ok bool) {
	m := o.Props.Get("match")
	if m == "" || c == nil {
		return writes{}, false
	}
	return writes{out: o, name: name, uri: c.URI, db: c.Database, coll: c.Collection, match: m}, true
}

// globsMeet reports whether some tag is matched by both Fluent Bit Match
// patterns a and b ('*' is any run of characters, all else itself).
func globsMeet(a, b string) bool {
	seen := map[[2]int]bool{}
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		switch {
		case i == len(a) && j == len(b):
			return true
		case seen[[2]int{i, j}]:
			return false // tried already, and it was false or is being tried
		}
		seen[[2]int{i, j}] = true
		switch {
		case i < len(a) && a[i] == '*':
			return meet(i+1, j) || j < len(b) && meet(i, j+1)
		case j < len(b) && b[j] == '*':
			return meet(i, j+1) || i < len(a) && meet(i+1, j)
		case i < len(a) && j < len(b):
			return a[i] == b[j] && meet(i+1, j+1)
		}
		return false
	}
	return meet(0, 0)
}
