package mongolog

import (
	"strings"
	"testing"
)

// mongolog check runs the plugin's start-up rules for the line's time:
// time_from_log needs a parser that gives one, parse_time_format must
// compile, and parse_time_key and parse_time_format belong to json and
// logfmt.
func TestCheckLineTime(t *testing.T) {
	const safe = "    Workers 1\n    Retry_Limit no_limits\n"
	for _, c := range []struct {
		settings string
		want     string // "" means ok
	}{
		{"time_from_log on\n", `time_from_log: invalid value "on": needs a parser that gives the line's time (parser is none)`},
		{"parser regex\nparse_regex ^(?P<at>\\S+) (?P<msg>.*)$\ntime_from_log on\n", `time_from_log: invalid value "on": parser regex gives no time here: parse_regex has no group named time`},
		{"parser json\nparse_time_format %Y-%m-%d %Q\n", `parse_time_format: invalid value "%Y-%m-%d %Q": unknown directive %Q; allowed: %Y`},
		{"parser apache_combined\nparse_time_key ts\n", `parse_time_key: invalid value "ts": only used with parser json or logfmt (parser is apache_combined)`},
		{"parser json\ntime_from_log on\n", ""},
		{"parser logfmt\nparse_time_key ts\nparse_time_format %d/%b/%Y:%H:%M:%S %z\ntime_from_log on\n", ""},
		{"parser regex\nparse_regex ^(?P<time>\\S+) (?P<msg>.*)$\ntime_from_log on\n", ""},
		{"parser nginx_access\ntime_from_log on\n", ""},
	} {
		problems, out := check(t, safe+c.settings)
		switch {
		case c.want == "" && (problems != 0 || !strings.Contains(out, ": ok")):
			t.Errorf("%q: %d problems, want ok:\n%s", c.settings, problems, out)
		case c.want != "" && (problems != 1 || !strings.Contains(out, c.want)):
			t.Errorf("%q: %d problems, want 1 saying %q:\n%s", c.settings, problems, c.want, out)
		}
	}
}
