package naming

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxTagPart is the largest N of $TAG[N].
const maxTagPart = 999

// databaseForbidden are the bytes a database name cannot hold.
const databaseForbidden = "/\\. \"$\x00"

// Parse parses a collection name template. The syntax is Fluent Bit's
// record accessor, as rewrite_tag and other plugins read it:
//
//	$TAG             the whole tag
//	$TAG[N]          part N of the tag split on '.', from 0
//	$name            a top-level record field
//	$name['k']["k"]  nested keys, quoted with ' or " (a quote inside is
//	                 written twice); [N] is element N of an array
//
//	$['k']['k2']     the same with the first key quoted too (not in
//	                 Fluent Bit)
//
// A field name starts with a letter or '_' and goes on with letters,
// digits, '_' and '-'; it ends at the first other byte, so "$app.logs" reads
// the field app and adds ".logs", but "$app_logs" and "$app-logs" read the
// field app_logs and app-logs, as in Fluent Bit. To follow a field with such
// text, or to read a top-level key with other bytes, quote it:
// "$['app']_logs". As in Fluent Bit, "$TAG" is always the tag when those
// four bytes are there: "$TAGS" is the tag then "S".
// Everything else is literal text, copied into the name as is: it must be
// valid UTF-8 without NUL, a '$' always starts a placeholder, and a
// collection template cannot start with "system." or ".". An empty
// template is an error.
func Parse(s string) (*Template, error) {
	return parse(s, Collection)
}

// ParseDatabase parses a database name template, as Parse, and also
// refuses literal text holding any of / \ . space " (a database name
// cannot).
func ParseDatabase(s string) (*Template, error) {
	return parse(s, Database)
}

// parse splits s into literal parts and placeholders and checks the
// literal parts for kind k.
func parse(s string, k Kind) (*Template, error) {
	if s == "" {
		return nil, &Error{What: "empty template", Why: "a MongoDB name cannot be empty"}
	}
	t := &Template{src: s, kind: k}
	lit := 0 // where the current literal part starts
	for i := 0; i < len(s); {
		if s[i] != '$' {
			i++
			continue
		}
		if lit < i {
			if err := checkLiteral(s, lit, i, k); err != nil {
				return nil, err
			}
			t.parts = append(t.parts, part{kind: literal, text: s[lit:i]})
		}
		p, next, err := placeholder(s, i)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, p)
		i, lit = next, next
	}
	if lit < len(s) {
		if err := checkLiteral(s, lit, len(s), k); err != nil {
			return nil, err
		}
		t.parts = append(t.parts, part{kind: literal, text: s[lit:]})
	}
	if k == Collection {
		return t, checkCollectionStart(s)
	}
	return t, nil
}

// checkLiteral checks the literal text s[from:to] for kind k.
func checkLiteral(s string, from, to int, k Kind) error {
	for i := from; i < to; {
		c := s[i]
		switch {
		case c == 0:
			return &Error{Column: i + 1, What: "NUL", Why: "a MongoDB name cannot contain NUL"}
		case k == Database && strings.IndexByte(databaseForbidden, c) >= 0:
			return &Error{Column: i + 1, What: strconv.Quote(string(c)),
				Why: `a database name cannot contain / \ . space " $ or NUL`}
		case c < utf8.RuneSelf:
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:to])
		if r == utf8.RuneError && n == 1 {
			return &Error{Column: i + 1, What: "invalid UTF-8", Why: "a MongoDB name is UTF-8"}
		}
		i += n
	}
	return nil
}

// checkCollectionStart refuses a collection template whose literal start
// makes every name invalid.
func checkCollectionStart(s string) error {
	switch {
	case strings.HasPrefix(s, "system."):
		return &Error{Column: 1, What: `"system."`, Why: "a collection name cannot start with system. (reserved by MongoDB)"}
	case s[0] == '.':
		return &Error{Column: 1, What: `"."`, Why: "a collection name cannot start with ."}
	}
	return nil
}

// placeholder parses the placeholder starting with the '$' at s[at] and
// returns it with the index just past it.
func placeholder(s string, at int) (part, int, error) {
	i := at + 1
	if strings.HasPrefix(s[i:], "TAG") {
		return tagPlaceholder(s, at)
	}
	if i < len(s) && s[i] == '[' {
		return fieldPlaceholder(s, i, nil)
	}
	if i >= len(s) || !nameStart(s[i]) {
		if i < len(s) && isDigit(s[i]) {
			return part{}, 0, &Error{Column: at + 1, What: "$" + s[i:i+1],
				Why: "regex captures ($0 to $9) are not supported; use $TAG, $TAG[N] or $field"}
		}
		return part{}, 0, &Error{Column: at + 1, What: "$ without TAG or a field name",
			Why: "a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $"}
	}
	j := i + 1
	for j < len(s) && nameByte(s[j]) {
		j++
	}
	return fieldPlaceholder(s, j, []string{s[i:j]})
}

// fieldPlaceholder parses the keys in brackets from s[j] on, after the
// keys of path, and returns the field placeholder with the index just past
// it.
func fieldPlaceholder(s string, j int, path []string) (part, int, error) {
	for j < len(s) && s[j] == '[' {
		key, next, err := subkey(s, j)
		if err != nil {
			return part{}, 0, err
		}
		path = append(path, key)
		j = next
	}
	return part{kind: field, path: path}, j, nil
}

// tagPlaceholder parses $TAG or $TAG[N] at s[at].
func tagPlaceholder(s string, at int) (part, int, error) {
	open := at + 4
	if open >= len(s) || s[open] != '[' {
		return part{kind: wholeTag}, open, nil
	}
	end := strings.IndexByte(s[open:], ']')
	if end < 0 {
		return part{}, 0, &Error{Column: open + 1, What: "unclosed ["}
	}
	digits := s[open+1 : open+end]
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n > maxTagPart || !allDigits(digits) {
		return part{}, 0, &Error{Column: open + 2, What: "tag part " + strconv.Quote(digits),
			Why: "$TAG[N] takes a number N from 0 to " + strconv.Itoa(maxTagPart)}
	}
	return part{kind: tagPart, index: n}, open + end + 1, nil
}

// subkey parses the ['key'], ["key"] or [N] at s[open] and returns the key
// with the index just past the ']'.
func subkey(s string, open int) (string, int, error) {
	i := open + 1
	var key string
	switch {
	case i >= len(s):
		return "", 0, &Error{Column: open + 1, What: "unclosed ["}
	case s[i] == '\'' || s[i] == '"':
		k, next, err := quoted(s, i)
		if err != nil {
			return "", 0, err
		}
		key, i = k, next
	case isDigit(s[i]):
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		key, i = s[i:j], j
	default:
		return "", 0, &Error{Column: i + 1, What: "expected a quoted key or an index after [",
			Why: `write $name['key'], $name["key"] or $name[0]`}
	}
	switch {
	case i >= len(s):
		return "", 0, &Error{Column: open + 1, What: "unclosed ["}
	case s[i] != ']':
		return "", 0, &Error{Column: i + 1, What: "expected ] after the key"}
	}
	return key, i + 1, nil
}

// quoted reads the key quoted at s[at] (a quote inside is doubled) and
// returns it with the index just past the closing quote.
func quoted(s string, at int) (string, int, error) {
	q := s[at]
	var doubled strings.Builder // used only once a doubled quote is met
	start := at + 1
	for i := start; i < len(s); i++ {
		switch {
		case s[i] == 0:
			return "", 0, &Error{Column: i + 1, What: "NUL in a key", Why: "a field name cannot contain NUL"}
		case s[i] != q:
			continue
		case i+1 < len(s) && s[i+1] == q:
			doubled.WriteString(s[start : i+1])
			i++
			start = i + 1
			continue
		}
		key := s[start:i]
		if doubled.Len() > 0 {
			key = doubled.String() + key
		}
		if key == "" {
			return "", 0, &Error{Column: at + 1, What: "empty key"}
		}
		return key, i + 1, nil
	}
	return "", 0, &Error{Column: at + 1, What: "unclosed quote"}
}

func nameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func nameByte(c byte) bool { return nameStart(c) || isDigit(c) || c == '-' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
