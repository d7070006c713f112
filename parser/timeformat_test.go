package parser

import (
	"strings"
	"testing"
	"time"
)

func TestTimeFormatParse(t *testing.T) {
	cases := []struct {
		format string
		good   map[string]string // value: the time it gives
		bad    []string
	}{
		{"%d/%b/%Y:%H:%M:%S %z", map[string]string{
			"10/Oct/2000:13:55:36 -0700":  "2000-10-10T20:55:36Z",
			"01/jan/2024:00:30:00 +01:00": "2023-12-31T23:30:00Z",
			"1/Jan/2024:00:30:00 Z":       "2024-01-01T00:30:00Z",
			"10/Oct/2000:13:55:36   +02":  "2000-10-10T11:55:36Z", // a space matches a run of them
		}, []string{"10/Oct/2000:13:55:36", "10/Oct/2000 13:55:36 -0700", "31/Feb/2000:13:55:36 -0700", "10/Foo/2000:13:55:36 -0700", "10/Oct/2000:13:55:36 -0700 x"}},
		{"%Y-%m-%dT%H:%M:%S.%L%z", map[string]string{
			"2024-06-01T10:00:00.123+0200":           "2024-06-01T08:00:00.123Z",
			"2024-06-01T10:00:00.123456789123-01:00": "2024-06-01T11:00:00.123456789Z",
			"2024-06-01T10:00:00.5Z":                 "2024-06-01T10:00:00.5Z",
		}, []string{"2024-06-01T10:00:00+0200", "2024-06-01T10:00:00.+0200", "2024-06-01T10:00:00.123"}},
		{"%Y%m%d %H%M%S", map[string]string{"20240601 100000": "2024-06-01T10:00:00Z"}, []string{"2024061 100000x"}},
		{"%a %b %e %T %Y", map[string]string{
			"Sat Jun  1 08:00:01 2024":      "2024-06-01T08:00:01Z",
			"Saturday June 1 08:00:01 2024": "2024-06-01T08:00:01Z",
			"sat jun 11 08:00:01 2024":      "2024-06-11T08:00:01Z",
		}, []string{"Sat Jun  1 08:00 2024", "Sax Jun  1 08:00:01 2024"}},
		{"%F %T %Z", map[string]string{"2024-06-01 10:00:00 UTC": "2024-06-01T10:00:00Z", "2024-06-01 10:00:00 GMT": "2024-06-01T10:00:00Z"},
			[]string{"2024-06-01 10:00:00 CEST", "2024-06-01 10:00:00"}},
		{"%y-%j %H:%M", map[string]string{"24-001 10:00": "2024-01-01T10:00:00Z", "24-366 10:00": "2024-12-31T10:00:00Z", "99-032 00:00": "1999-02-01T00:00:00Z", "68-001 00:00": "2068-01-01T00:00:00Z"},
			[]string{"23-366 10:00", "24-000 10:00", "24-367 10:00"}},
		{"%s", map[string]string{"1717236000": "2024-06-01T10:00:00Z", "-60": "1969-12-31T23:59:00Z"}, []string{"1717236000.5", "x", "999999999999999"}},
		{"%s.%L", map[string]string{"1717236000.25": "2024-06-01T10:00:00.25Z"}, nil},
		{"[%Y-%m-%d %H:%M:%S] 100%%", map[string]string{"[2024-06-01 10:00:00] 100%": "2024-06-01T10:00:00Z"}, []string{"[2024-06-01 10:00:00] 100"}},
		{"", map[string]string{"2024-06-01T10:00:00Z": "2024-06-01T10:00:00Z", "1717236000": "2024-06-01T10:00:00Z"}, []string{"soon", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00"}},
	}
	for _, c := range cases {
		f, err := ParseTimeFormat(c.format)
		if err != nil {
			t.Errorf("ParseTimeFormat(%q): %v", c.format, err)
			continue
		}
		if f.String() != c.format || f.IsDefault() != (c.format == "") {
			t.Errorf("ParseTimeFormat(%q): String %q, IsDefault %v", c.format, f.String(), f.IsDefault())
		}
		for in, want := range c.good {
			got, ok := f.Parse(in)
			if !ok || got.Location() != time.UTC || got.Format(time.RFC3339Nano) != want {
				t.Errorf("format %q: Parse(%q) = %v, %v; want %s", c.format, in, got, ok, want)
			}
		}
		for _, in := range c.bad {
			if got, ok := f.Parse(in); ok {
				t.Errorf("format %q: Parse(%q) = %v, want failure", c.format, in, got)
			}
		}
	}
}

func TestTimeFormatRejected(t *testing.T) {
	for format, want := range map[string]string{
		"%Y-%m-%d %Q":    "unknown directive %Q; allowed: %Y %y %m %b",
		"%Y-%m-%d %H:%":  "ends with a lone %",
		"%H:%M:%S":       "gives no date",
		"%b %d %H:%M:%S": "gives no date", // syslog's time has no year
		"%Y-%m":          "gives no date",
		"%d/%m/%y %I":    "unknown directive %I",
		"%Y-%m-%d%k":     "literal text",
	} {
		if f, err := ParseTimeFormat(format); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTimeFormat(%q) = %v, %v; want an error saying %q", format, f, err, want)
		}
	}
	var nilFormat *TimeFormat
	if !nilFormat.IsDefault() || nilFormat.String() != "" {
		t.Error("a nil format is not the default")
	}
}

func TestTimeFormatNoAllocs(t *testing.T) {
	f, err := ParseTimeFormat("%a %d/%b/%Y:%H:%M:%S.%L %z")
	if err != nil {
		t.Fatal(err)
	}
	in := "Tue 10/Oct/2000:13:55:36.250 -0700"
	if _, ok := f.Parse(in); !ok {
		t.Fatalf("Parse(%q) failed", in)
	}
	if n := testing.AllocsPerRun(100, func() { f.Parse(in) }); n != 0 {
		t.Errorf("Parse: %v allocations, want 0", n)
	}
}
