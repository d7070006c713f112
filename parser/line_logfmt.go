package parser

import (
	"errors"
	"strings"
)

// logfmtParser reads logfmt lines: space-separated key=value pairs, a value
// in double quotes when it holds spaces (key="a \"b\""), and bare keys, which
// become Bool true. Values are strings. A line needs at least one key=value
// pair: plain text would otherwise parse as a row of bare keys. The value
// of the time key becomes a Time when it reads as one.
type logfmtParser struct{ time *lineTime }

var (
	errLogfmtKey        = errors.New(`logfmt: want a key before "="`)
	errLogfmtQuote      = errors.New("logfmt: unexpected double quote")
	errLogfmtUnterm     = errors.New("logfmt: unterminated quoted value")
	errLogfmtAfterQuote = errors.New("logfmt: want a space after a quoted value")
	errLogfmtNoPair     = errors.New("logfmt: no key=value pair")
)

// logfmtPair is one parsed pair; bare is set for a key without a value.
type logfmtPair struct {
	key, val string
	bare     bool
}

// Parse implements LineParser.
func (p logfmtParser) Parse(line string, out FieldSink) error {
	var buf [16]logfmtPair
	pairs, err := scanLogfmt(line, buf[:0])
	if err != nil {
		return err
	}
	for _, pair := range pairs {
		switch {
		case pair.bare:
			out.Bool(pair.key, true)
		case p.time != nil && pair.key == p.time.key:
			if t, ok := p.time.parse(pair.val); ok {
				out.Time(pair.key, t)
				continue
			}
			out.String(pair.key, pair.val)
		default:
			out.String(pair.key, pair.val)
		}
	}
	return nil
}

// Types implements LineParser: logfmt has no stock Fluent Bit parser.
func (logfmtParser) Types() map[string]Kind { return nil }

// TimeKey implements LineParser.
func (p logfmtParser) TimeKey() string { return p.time.key }

// scanLogfmt appends the pairs of line s to pairs.
func scanLogfmt(s string, pairs []logfmtPair) ([]logfmtPair, error) {
	hasValue := false
	for {
		s = strings.TrimLeft(s, logfmtSpace)
		if s == "" {
			break
		}
		end := strings.IndexAny(s, logfmtSpace+`="`)
		if end < 0 {
			end = len(s)
		}
		key := s[:end]
		s = s[end:]
		switch {
		case key == "" && s[0] == '=':
			return nil, errLogfmtKey
		case s != "" && s[0] == '"':
			return nil, errLogfmtQuote
		case s == "" || s[0] != '=':
			pairs = append(pairs, logfmtPair{key: key, bare: true})
			continue
		}
		val, rest, err := scanLogfmtValue(s[1:])
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, logfmtPair{key: key, val: val})
		hasValue = true
		s = rest
	}
	if !hasValue {
		return nil, errLogfmtNoPair
	}
	return pairs, nil
}

// logfmtSpace separates logfmt pairs.
const logfmtSpace = " \t\r\n"

// scanLogfmtValue reads the value after "=": quoted, or up to the next space.
func scanLogfmtValue(s string) (val, rest string, err error) {
	if s != "" && s[0] == '"' {
		raw, rest, ok := cutQuoted(s[1:])
		if !ok {
			return "", "", errLogfmtUnterm
		}
		if rest != "" && !strings.ContainsRune(logfmtSpace, rune(rest[0])) {
			return "", "", errLogfmtAfterQuote
		}
		return unescapeLogfmt(raw), rest, nil
	}
	end := strings.IndexAny(s, logfmtSpace)
	if end < 0 {
		end = len(s)
	}
	if strings.IndexByte(s[:end], '"') >= 0 {
		return "", "", errLogfmtQuote
	}
	return s[:end], s[end:], nil
}

// unescapeLogfmt resolves \" \\ \n \r \t in a quoted value; any other
// backslash is kept as written.
func unescapeLogfmt(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			if r, ok := logfmtEscapes[s[i+1]]; ok {
				b.WriteByte(r)
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

var logfmtEscapes = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}
