package parser

import (
	"fmt"
	"strings"
	"time"
)

// lineParserNames lists the names NewLineParser accepts, for error messages.
const lineParserNames = "apache_common, apache_combined, apache_error, nginx_access, json, logfmt, regex, none"

// DefaultTimeKey is the field a JSON or logfmt line's time is read from
// unless LineConfig says otherwise.
const DefaultTimeKey = "time"

// LineConfig names a line parser and its settings.
type LineConfig struct {
	Name  string // one of lineParserNames, case-insensitive
	Regex string // the pattern of parser regex; empty for the others
	// TimeKey and TimeFormat apply to parsers json and logfmt: the
	// top-level field TimeKey ("" means DefaultTimeKey) is emitted as a Time
	// when TimeFormat (nil means the default) reads it, and stays as it is
	// written otherwise.
	TimeKey    string
	TimeFormat *TimeFormat
	// Epoch lets the default format read a number (seconds since 1970) as
	// well as ISO 8601: set with time_from_log, where the field is the
	// record's time; without it a number such as a duration stays one.
	Epoch bool
}

// NewLineParser returns the line parser called name (case-insensitive),
// with the default time key and format. regex is the pattern of the
// "regex" parser and must be empty for the others. "none" and "" give a nil
// parser and no error: lines are kept as they are.
func NewLineParser(name, regex string) (LineParser, error) {
	return NewLine(LineConfig{Name: name, Regex: regex})
}

// NewLine returns the line parser c describes (see NewLineParser).
func NewLine(c LineConfig) (LineParser, error) {
	name, regex := strings.ToLower(strings.TrimSpace(c.Name)), c.Regex
	if name != "regex" && regex != "" {
		return nil, fmt.Errorf("regex %q is only used by parser regex, not by parser %q", regex, name)
	}
	tf := &lineTime{key: c.TimeKey, format: c.TimeFormat, epoch: c.Epoch}
	if tf.key == "" {
		tf.key = DefaultTimeKey
	}
	switch name {
	case "", "none":
		return nil, nil
	case "apache_common":
		return apacheCommon, nil
	case "apache_combined":
		return apacheCombined, nil
	case "nginx_access":
		return nginxAccess, nil
	case "apache_error":
		return apacheErrorParser{}, nil
	case "json":
		return jsonLineParser{tf}, nil
	case "logfmt":
		return logfmtParser{tf}, nil
	case "regex":
		return newRegexParser(regex)
	}
	return nil, fmt.Errorf("unknown parser %q: allowed %s", name, lineParserNames)
}

// lineTime is the time field of a JSON or logfmt line.
type lineTime struct {
	key    string
	format *TimeFormat // nil: the default
	epoch  bool        // see LineConfig.Epoch
}

// parse reads the text of the time field.
func (lt *lineTime) parse(s string) (time.Time, bool) {
	if !lt.epoch && lt.format.IsDefault() && isNumber(s) {
		return time.Time{}, false
	}
	return lt.format.Parse(s)
}

// isNumber reports whether s is a decimal number, as seconds since 1970
// are written (a sign, digits, a fraction).
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
		default:
			return false
		}
	}
	return digits > 0
}

// trimLineEnd drops the spaces, tabs and line breaks that end a line (a tail
// of a CRLF file leaves the "\r").
func trimLineEnd(s string) string {
	i := len(s)
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\r' || s[i-1] == '\n') {
		i--
	}
	return s[:i]
}

// cutQuoted reads a double-quoted field whose opening quote has already been
// consumed: it returns the field's content as written (escapes such as \"
// kept) and the text after the closing quote. A quote preceded by an odd
// number of backslashes is escaped and does not close the field.
func cutQuoted(s string) (field, rest string, ok bool) {
	for off := 0; ; {
		j := strings.IndexByte(s[off:], '"')
		if j < 0 {
			return "", "", false
		}
		j += off
		backslashes := 0
		for k := j - 1; k >= 0 && s[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return s[:j], s[j+1:], true
		}
		off = j + 1
	}
}

// cutBlock reads the "[...]" that s starts with and returns its content and
// the text after it.
func cutBlock(s string) (block, rest string, ok bool) {
	if s == "" || s[0] != '[' {
		return "", "", false
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return "", "", false
	}
	return s[1:end], s[end+1:], true
}
