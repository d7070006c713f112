package parser

import (
	"errors"
	"fmt"
	"regexp"
)

// regexParser reads lines with a user's regular expression (Go RE2 syntax):
// each named group that matched becomes a String field. A group named "time"
// becomes a Time when parseLineTime understands it.
type regexParser struct {
	re *regexp.Regexp
}

var errRegexNoMatch = errors.New("regex: line does not match")

func newRegexParser(expr string) (*regexParser, error) {
	const want = "a Go (RE2) regular expression with named groups such as (?P<host>\\S+) or (?<host>\\S+)"
	if expr == "" {
		return nil, fmt.Errorf("parser regex needs a regex: %s", want)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %v; want %s", expr, err, want)
	}
	for _, name := range re.SubexpNames() {
		if name != "" {
			return &regexParser{re: re}, nil
		}
	}
	return nil, fmt.Errorf("regex %q has no named group; want %s", expr, want)
}

// Parse implements LineParser. Groups are emitted in the order of the
// pattern; a group that did not take part in the match is left out.
func (p *regexParser) Parse(line string, out FieldSink) error {
	m := p.re.FindStringSubmatchIndex(line)
	if m == nil {
		return errRegexNoMatch
	}
	for i, name := range p.re.SubexpNames() {
		if name == "" || m[2*i] < 0 {
			continue
		}
		val := line[m[2*i]:m[2*i+1]]
		if name == "time" {
			if t, ok := parseLineTime(val); ok {
				out.Time(name, t)
				continue
			}
		}
		out.String(name, val)
	}
	return nil
}

// TimeKey implements LineParser: a regex gives a time in its group named time.
func (p *regexParser) TimeKey() string {
	for _, name := range p.re.SubexpNames() {
		if name == "time" {
			return name
		}
	}
	return ""
}

// Types implements LineParser: the fields of a user's regex have no known types.
func (p *regexParser) Types() map[string]Kind { return nil }
