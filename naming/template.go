// Package naming turns a name template, such as "logs_$TAG[1]" or
// "$kubernetes['namespace_name']", into MongoDB database and collection
// names for each record: the tag and record fields fill the placeholders,
// every value is made safe, and the name always obeys MongoDB's rules.
//
// The syntax is Fluent Bit's record accessor (see Parse). Resolution never
// fails: a missing value becomes Template.Missing, a long name is cut and
// marked with a hash (see Template.Resolve), and a Set bounds how many
// distinct targets records may open.
package naming

import (
	"slices"
	"strconv"
	"strings"
)

// Kind says which MongoDB name a template makes.
type Kind uint8

const (
	// Collection names: no $ or NUL, never starting with "system.", at
	// most MaxCollectionBytes, and <database>.<collection> at most
	// MaxNamespaceBytes.
	Collection Kind = iota
	// Database names: under 64 bytes, none of / \ . space " $ or NUL.
	Database
)

// Name limits, in bytes.
const (
	MaxDatabaseBytes   = 63  // MongoDB: a database name is under 64 bytes
	MaxCollectionBytes = 200 // the plugin's own limit, as for the collection key
	// MaxNamespaceBytes bounds <database>.<collection>: MongoDB allows
	// 255 bytes, servers on DocumentDB (FerretDB v2) 235, and a resolved
	// name fits both.
	MaxNamespaceBytes = 235
	// MaxReserve is the most Template.Reserve counts for.
	MaxReserve = 64
)

// Defaults for the values that stand in for record placeholders.
const (
	DefaultMissing  = "unknown" // a placeholder without a usable value
	DefaultOverflow = "other"   // record placeholders of the overflow target
)

// partKind is what one part of a template is.
type partKind uint8

const (
	literal  partKind = iota // text copied as is
	wholeTag                 // $TAG
	tagPart                  // $TAG[N]
	field                    // $name['sub']...
)

// part is one literal or placeholder of a template.
type part struct {
	kind  partKind
	text  string   // literal: the text
	index int      // tagPart: N
	path  []string // field: the keys from the record's top level down
}

// Template is a parsed name template. Set its fields before the first
// Resolve; after that it is safe for concurrent use.
type Template struct {
	// Missing replaces a placeholder whose value is missing, empty or of
	// another type than string, number or boolean; "" means
	// DefaultMissing. It is made safe like any value.
	Missing string
	// Reserve is how many bytes a collection name leaves free for a suffix
	// the caller appends later (a partition's "_YYYYMMDD", "_dead"). It
	// counts up to MaxReserve; database templates ignore it.
	Reserve int

	src   string
	kind  Kind
	parts []part
}

// Kind is the kind of name t was parsed for.
func (t *Template) Kind() Kind { return t.kind }

// String is the template's source text, as given to Parse.
func (t *Template) String() string { return t.src }

// Static reports whether t has no placeholder: every record gets the same
// name.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.kind != literal {
			return false
		}
	}
	return true
}

// TagOnly reports whether t reads no record field (only $TAG and $TAG[N],
// or nothing): its name is the same for every record of a chunk. A static
// template is TagOnly.
func (t *Template) TagOnly() bool {
	for _, p := range t.parts {
		if p.kind == field {
			return false
		}
	}
	return true
}

// Fields lists the record paths t reads, in template order, each once; a
// path is the keys from the record's top level down ($a['b'] is [a b], an
// index [0] is the key "0"). The slices are copies.
func (t *Template) Fields() [][]string {
	var out [][]string
	for _, p := range t.parts {
		if p.kind != field {
			continue
		}
		seen := slices.ContainsFunc(out, func(q []string) bool { return slices.Equal(q, p.path) })
		if !seen {
			out = append(out, slices.Clone(p.path))
		}
	}
	return out
}

// Error is a template that does not parse. Column is the 1-based byte
// position of the problem in the template; 0 when it is the whole template.
type Error struct {
	Column int
	What   string // what is wrong, e.g. "unclosed ["
	Why    string // the rule, or "" when What says it all
}

// Error reads "<what> at column <n>[: <why>]".
func (e *Error) Error() string {
	s := e.What
	if e.Column > 0 {
		s += " at column " + strconv.Itoa(e.Column)
	}
	if e.Why != "" {
		s += ": " + e.Why
	}
	return s
}

// Suffixed is the source text of a template that gives t's names followed
// by the literal text lit, as t's own source + lit might not: in
// "$ns" + "_dead" the field would read ns_dead. Field placeholders are
// written quoted ($['ns']), the rest as parsed.
func (t *Template) Suffixed(lit string) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch p.kind {
		case literal:
			b.WriteString(p.text)
		case wholeTag:
			b.WriteString("$TAG")
		case tagPart:
			b.WriteString("$TAG[" + strconv.Itoa(p.index) + "]")
		case field:
			b.WriteByte('$')
			for _, k := range p.path {
				b.WriteString("['" + strings.ReplaceAll(k, "'", "''") + "']")
			}
		}
	}
	return b.String() + lit
}
