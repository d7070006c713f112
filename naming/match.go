package naming

import "strings"

// Matches reports whether name is one t can give: its literal parts in
// order, each placeholder standing for one or more bytes of
// [A-Za-z0-9_-] (lower case for a database), and the name cut and marked
// with a hash (see Resolve) when what is kept of it fits the start of
// such a name. A collection name beginning "_system." also matches as the
// name without that '_'. A partition of a target matches once its suffix
// is cut (see layout.Partitions).
// A reserved database (see Reserved) matches no database template: no
// record is written there.
func (t *Template) Matches(name string) bool {
	if t.kind == Database && Reserved(name) {
		return false
	}
	if t.kind == Collection && strings.HasPrefix(name, "_system.") && t.matches(name[1:]) {
		return true
	}
	return t.matches(name)
}

func (t *Template) matches(name string) bool {
	if matchParts(t.parts, name, t.kind, false) {
		return true
	}
	// A cut name: what is kept, then '_' and HashDigits hex digits.
	cut := len(name) - 1 - HashDigits
	if cut < 1 || name[cut] != '_' || !isHex(name[cut+1:]) {
		return false
	}
	return matchParts(t.parts, name[:cut], t.kind, true)
}

// matchParts matches name against parts; with prefix, name may end
// anywhere inside them.
func matchParts(parts []part, name string, k Kind, prefix bool) bool {
	if len(parts) == 0 {
		return name == ""
	}
	p := parts[0]
	if p.kind == literal {
		if prefix && len(name) <= len(p.text) {
			return strings.HasPrefix(p.text, name)
		}
		rest, ok := strings.CutPrefix(name, p.text)
		return ok && matchParts(parts[1:], rest, k, prefix)
	}
	// A placeholder: one or more value bytes, tried longest first.
	n := 0
	for n < len(name) && valueByte(name[n], k) {
		n++
	}
	if prefix && n == len(name) && n > 0 {
		return true
	}
	for ; n > 0; n-- {
		if matchParts(parts[1:], name[n:], k, prefix) {
			return true
		}
	}
	return false
}

// valueByte reports whether c can come from a placeholder's value in a
// name of kind k.
func valueByte(c byte, k Kind) bool {
	if k == Database && 'A' <= c && c <= 'Z' {
		return false
	}
	return safeValue[c] == c
}

func isHex(s string) bool {
	if len(s) != HashDigits {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// MatchesOverflow reports whether name is one Overflowed can give: as
// Matches, but every record placeholder stands for overflow ("" means
// DefaultOverflow) made safe as a value is, and only tag placeholders for
// any value.
func (t *Template) MatchesOverflow(name, overflow string) bool {
	if overflow == "" {
		overflow = DefaultOverflow
	}
	m := &safeValue
	if t.kind == Database {
		m = &safeLower
	}
	safe := []byte(overflow)
	for i, c := range safe {
		safe[i] = m[c]
	}
	o := *t
	o.parts = make([]part, len(t.parts))
	for i, p := range t.parts {
		if p.kind == field {
			p = part{kind: literal, text: string(safe)}
		}
		o.parts[i] = p
	}
	return o.Matches(name)
}

// MatchesOverflow reports whether (db, coll) is an overflow target
// Overflowed or OverflowedAll can give (see Template.MatchesOverflow).
func (t Pair) MatchesOverflow(db, coll, overflow string) bool {
	return t.Database.MatchesOverflow(db, overflow) && t.Collection.MatchesOverflow(coll, overflow)
}
