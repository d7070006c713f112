package parser

import (
	"strings"
	"testing"
	"time"
)

// fuzzRegex is the pattern FuzzLineRegex runs lines through.
const fuzzRegex = `^(?<host>\S+) \S+ (?<user>\S+) \[(?<time>[^\]]+)\] "(?<request>[^"]*)"(?: (?<code>\d+))?`

// fuzzLineParser checks, for any line, that the parser does not panic, emits
// nothing when it fails, and emits balanced Begin/End when it succeeds. The
// seed corpus is in testdata/fuzz/<target name>.
func fuzzLineParser(f *testing.F, name, regex string) {
	p := mustLineParser(f, name, regex)
	f.Fuzz(func(t *testing.T, line string) {
		var rec lineRecorder
		if err := p.Parse(line, &rec); err != nil {
			if len(rec.got) > 0 {
				t.Fatalf("Parse(%q) failed (%v) but emitted %q", line, err, rec.got)
			}
			return
		}
		if !rec.balanced() {
			t.Fatalf("Parse(%q): unbalanced Begin/End: %q", line, rec.got)
		}
	})
}

func FuzzLineApacheCommon(f *testing.F)   { fuzzLineParser(f, "apache_common", "") }
func FuzzLineApacheCombined(f *testing.F) { fuzzLineParser(f, "apache_combined", "") }
func FuzzLineNginxAccess(f *testing.F)    { fuzzLineParser(f, "nginx_access", "") }
func FuzzLineApacheError(f *testing.F)    { fuzzLineParser(f, "apache_error", "") }
func FuzzLineJSON(f *testing.F)           { fuzzLineParser(f, "json", "") }
func FuzzLineLogfmt(f *testing.F)         { fuzzLineParser(f, "logfmt", "") }
func FuzzLineRegex(f *testing.F)          { fuzzLineParser(f, "regex", fuzzRegex) }

// FuzzParseTypeSpec checks that a spec either fails with no map or gives
// known kinds for non-empty, trimmed field names.
func FuzzParseTypeSpec(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		types, err := ParseTypeSpec(spec)
		if err != nil {
			if types != nil {
				t.Fatalf("ParseTypeSpec(%q) failed (%v) but returned %v", spec, err, types)
			}
			return
		}
		for field, k := range types {
			if field == "" || field != strings.TrimSpace(field) || k > KindTime {
				t.Fatalf("ParseTypeSpec(%q) gave %q:%d", spec, field, k)
			}
		}
	})
}

// FuzzTypeEmitTyped checks that EmitTyped emits exactly one field, and the
// value unchanged as a string when the conversion fails.
func FuzzTypeEmitTyped(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, k uint8) {
		var rec lineRecorder
		ok := EmitTyped(&rec, "v", s, Kind(k))
		if len(rec.got) != 1 || (!ok && rec.got[0] != "v="+s) {
			t.Fatalf("EmitTyped(%q, %d) = %v, %q", s, k, ok, rec.got)
		}
	})
}

// FuzzTimeFormat checks, for any format and value, that a format either
// fails to compile or reads the value without panicking, giving a time in
// UTC within years 1 to 9999 when it reads one; the default format too.
func FuzzTimeFormat(f *testing.F) {
	f.Add("%d/%b/%Y:%H:%M:%S %z", "10/Oct/2000:13:55:36 -0700")
	f.Add("%Y-%m-%dT%H:%M:%S.%L%z", "2024-06-01T10:00:00.123+0200")
	f.Add("%a %b %e %T %Y", "Sat Jun  1 08:00:01 2024")
	f.Add("%y-%j %H:%M %Z", "24-366 10:00 UTC")
	f.Add("%s.%L", "1717236000.25")
	f.Add("", "2024-06-01 10:00:00.5 +02:00")
	f.Add("", "-1717236000.5")
	f.Fuzz(func(t *testing.T, format, value string) {
		for _, fm := range []string{format, ""} {
			tf, err := ParseTimeFormat(fm)
			if err != nil {
				if tf != nil {
					t.Fatalf("ParseTimeFormat(%q) failed (%v) but returned %v", fm, err, tf)
				}
				continue
			}
			if got, ok := tf.Parse(value); ok && (got.Location() != time.UTC || got.Year() < 1 || got.Year() > 9999) {
				t.Fatalf("format %q: Parse(%q) = %v", fm, value, got)
			}
		}
	})
}
