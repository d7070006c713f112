package parser

import (
	"testing"
	"time"
)

func TestLineParseTime(t *testing.T) {
	good := map[string]string{
		"10/Oct/2000:13:55:36 -0700":      "2000-10-10T20:55:36Z",
		"29/Feb/2024:23:59:59 +0000":      "2024-02-29T23:59:59Z",
		"01/Jan/2024:00:30:00 +0100":      "2023-12-31T23:30:00Z",
		"2024-06-01T10:00:00Z":            "2024-06-01T10:00:00Z",
		"2024-06-01T10:00:00.123-03:00":   "2024-06-01T13:00:00.123Z",
		"2024-06-01 10:00:00,5":           "2024-06-01T10:00:00.5Z",
		"Wed Oct 11 14:32:52.123456 2000": "2000-10-11T14:32:52.123456Z",
		"Sat Jun  1 08:00:01 2024":        "2024-06-01T08:00:01Z",
		"Jun 01 08:00:01 2024":            "2024-06-01T08:00:01Z",
	}
	for in, want := range good {
		got, ok := parseLineTime(in)
		if !ok || got.Location() != time.UTC || got.Format(time.RFC3339Nano) != want {
			t.Errorf("parseLineTime(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-", "yesterday", "29/Feb/2023:00:00:00 +0000", "10/Oct/2000:24:00:00 +0000",
		"10/oct/2000:13:55:36 -0700", "10/Oct/2000:13:55:36 -07:00", "1x/Oct/2000:13:55:36 -0700", "2024-13-01T00:00:00Z"} {
		if got, ok := parseLineTime(in); ok {
			t.Errorf("parseLineTime(%q) = %v, want failure", in, got)
		}
	}
}
