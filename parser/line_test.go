package parser

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lineRecorder is a FieldSink that records each call as a short string:
// "host=127.0.0.1", "code:int=200", "size:null", "ok:bool=true",
// "t:time=2000-10-10T20:55:36Z", "m:{" ... "}", "a:[" ... "]". A time that
// is not in UTC is marked "t:time(not UTC)=...". unbalanced is set when End
// has no open map or array.
type lineRecorder struct {
	got        []string
	open       []byte // closing bracket of each open map or array
	unbalanced bool
}

func (r *lineRecorder) add(s string)            { r.got = append(r.got, s) }
func (r *lineRecorder) String(key, val string)  { r.add(key + "=" + val) }
func (r *lineRecorder) Int(key string, v int64) { r.add(key + ":int=" + strconv.FormatInt(v, 10)) }
func (r *lineRecorder) Float(key string, v float64) {
	r.add(key + ":float=" + strconv.FormatFloat(v, 'g', -1, 64))
}
func (r *lineRecorder) Bool(key string, v bool)      { r.add(key + ":bool=" + strconv.FormatBool(v)) }
func (r *lineRecorder) Null(key string)              { r.add(key + ":null") }
func (r *lineRecorder) BeginMap(key string)          { r.begin(key+":{", '}') }
func (r *lineRecorder) BeginArray(key string)        { r.begin(key+":[", ']') }
func (r *lineRecorder) begin(s string, closing byte) { r.add(s); r.open = append(r.open, closing) }
func (r *lineRecorder) Time(key string, t time.Time) {
	kind := ":time="
	if t.Location() != time.UTC {
		kind = ":time(not UTC)="
	}
	r.add(key + kind + t.Format(time.RFC3339Nano))
}

func (r *lineRecorder) End() {
	if len(r.open) == 0 {
		r.unbalanced = true
		r.add("End without Begin")
		return
	}
	r.add(string(r.open[len(r.open)-1]))
	r.open = r.open[:len(r.open)-1]
}

// balanced reports whether every Begin had its End.
func (r *lineRecorder) balanced() bool { return !r.unbalanced && len(r.open) == 0 }

// lineCase is one table test: the fields a line gives, or that it fails.
type lineCase struct {
	name string
	line string
	want []string // nil: the line must fail
}

// runLineCases parses each case with p and compares the recorded fields. It
// also checks that a failing parse emits nothing.
func runLineCases(t *testing.T, p LineParser, cases []lineCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rec lineRecorder
			err := p.Parse(c.line, &rec)
			switch {
			case c.want == nil && err == nil:
				t.Fatalf("Parse(%q) succeeded with %q, want an error", c.line, rec.got)
			case c.want == nil && len(rec.got) > 0:
				t.Fatalf("Parse(%q) failed (%v) but emitted %q", c.line, err, rec.got)
			case c.want != nil && err != nil:
				t.Fatalf("Parse(%q): %v", c.line, err)
			case c.want != nil && !slices.Equal(rec.got, c.want):
				t.Fatalf("Parse(%q)\n got %q\nwant %q", c.line, rec.got, c.want)
			}
			if !rec.balanced() {
				t.Fatalf("Parse(%q): unbalanced Begin/End: %q", c.line, rec.got)
			}
		})
	}
}

// mustLineParser returns the named parser or stops the test.
func mustLineParser(t testing.TB, name, regex string) LineParser {
	t.Helper()
	p, err := NewLineParser(name, regex)
	if err != nil || p == nil {
		t.Fatalf("NewLineParser(%q, %q) = %v, %v", name, regex, p, err)
	}
	return p
}

// fixtureLines reads the lines of a fixture file in test/testdata,
// the project's copy of the shared fixtures.
func fixtureLines(t testing.TB, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "test", "testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return lines
}

func TestNewLineParser(t *testing.T) {
	for _, name := range []string{"apache_common", "apache_combined", "apache_error", "nginx_access", "json", "logfmt", " JSON "} {
		if p, err := NewLineParser(name, ""); err != nil || p == nil {
			t.Errorf("NewLineParser(%q) = %v, %v", name, p, err)
		}
	}
	for _, name := range []string{"", "none", "None"} {
		if p, err := NewLineParser(name, ""); err != nil || p != nil {
			t.Errorf("NewLineParser(%q) = %v, %v; want nil, nil", name, p, err)
		}
	}
	if p, err := NewLineParser("regex", `^(?P<a>\w+) (?<b>\w+)$`); err != nil || p == nil {
		t.Errorf("NewLineParser(regex) = %v, %v", p, err)
	}
	bad := []struct{ name, regex, wantInErr string }{
		{"apache", "", "allowed apache_common, apache_combined"},
		{"regex", "", "named groups"},
		{"regex", `^(\w+)$`, "no named group"},
		{"regex", `^(?P<a>\w+`, "invalid regex"},
		{"json", `(?P<a>.*)`, "only used by parser regex"},
	}
	for _, c := range bad {
		_, err := NewLineParser(c.name, c.regex)
		if err == nil || !strings.Contains(err.Error(), c.wantInErr) {
			t.Errorf("NewLineParser(%q, %q) error = %v, want it to say %q", c.name, c.regex, err, c.wantInErr)
		}
	}
}

func TestLineCutQuoted(t *testing.T) {
	cases := []struct{ in, field, rest string }{
		{`abc" x`, "abc", " x"},
		{`a\"b" x`, `a\"b`, " x"},
		{`a\\" x`, `a\\`, " x"},
		{`a\\\"b"`, `a\\\"b`, ""},
		{`"`, "", ""},
	}
	for _, c := range cases {
		field, rest, ok := cutQuoted(c.in)
		if !ok || field != c.field || rest != c.rest {
			t.Errorf("cutQuoted(%q) = %q, %q, %v; want %q, %q", c.in, field, rest, ok, c.field, c.rest)
		}
	}
	for _, in := range []string{``, `abc`, `abc\"`, `\"`} {
		if _, _, ok := cutQuoted(in); ok {
			t.Errorf("cutQuoted(%q) succeeded, want no closing quote", in)
		}
	}
}

// TestLineNoAllocs guards that the hand-written parsers allocate nothing per
// line (without escapes to resolve).
func TestLineNoAllocs(t *testing.T) {
	combined := `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"`
	lines := map[string]string{
		"apache_combined": combined,
		"nginx_access":    combined,
		"apache_common":   `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
		"apache_error":    `[Wed Oct 11 14:32:52.123456 2000] [core:error] [pid 1234:tid 5678] [client 1.2.3.4:5678] AH00123: message`,
		"logfmt":          `ts=2024-06-01T10:00:00Z level=info msg="request handled" cost=855 flag`,
		"logfmt ":         `time=2024-06-01T10:00:00.123+02:00 level=info msg="request handled" cost=855 flag`,
	}
	for name, line := range lines {
		p := mustLineParser(t, strings.TrimSpace(name), "") // "logfmt ": a line with its time
		allocs := testing.AllocsPerRun(100, func() {
			if err := p.Parse(line, discardSink{}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per line, want 0", name, allocs)
		}
	}
}
