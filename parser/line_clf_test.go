package parser

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Fluent Bit v4.2.8's stock apache2 and nginx parsers (conf/parsers.conf),
// used as oracles: where they match a line, the scanners must agree with them.
var (
	stockApache2 = regexp.MustCompile(`^(?<host>[^ ]*) [^ ]* (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^ ]*) +\S*)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>.*)")?$`)
	stockNginx   = regexp.MustCompile(`^(?<remote>[^ ]*) (?<host>[^ ]*) (?<user>[^ ]*) \[(?<time>[^\]]*)\] "(?<method>\S+)(?: +(?<path>[^\"]*?)(?: +\S*)?)?" (?<code>[^ ]*) (?<size>[^ ]*)(?: "(?<referer>[^\"]*)" "(?<agent>[^\"]*)")`)
)

// access8Combined is what apache_combined gives for each line of access-8.log.
// The stock apache2 parser split the same lines into the same fields (see
// chunk-apache2-8.msgpack), all strings, without time and protocol.
var access8Combined = [][]string{
	{"host=127.0.0.1", "user=frank", "time:time=2000-10-10T20:55:36Z", "method=GET", "path=/apache_pb.gif", "protocol=HTTP/1.0",
		"code:int=200", "size:int=2326", "referer=http://www.example.com/start.html", "agent=Mozilla/4.08 [en] (Win98; I ;Nav)"},
	{"host=192.168.1.20", "user=-", "time:time=2006-07-28T13:27:10Z", "method=GET", "path=/cgi-bin/try/", "protocol=HTTP/1.0",
		"code:int=200", "size:int=3395", "referer=-", "agent=-"},
	{"host=10.0.0.5", "user=-", "time:time=2026-12-02T08:00:00Z", "method=POST", "path=/api/v1/items?id=5&q=a%20b", "protocol=HTTP/1.1",
		"code:int=201", "size:null", "referer=https://example.org/", "agent=curl/8.5.0"},
	{"host=::1", "user=-", "time:time=2026-12-02T08:00:01Z", "method=OPTIONS", "path=*", "protocol=HTTP/1.0",
		"code:int=200", "size:int=126", "referer=-", "agent=Apache/2.4.57 (Debian) (internal dummy connection)"},
	{"host=127.0.0.1", "user=-", "time:time=2026-12-02T08:00:02Z", "method=GET", "path=/index.html", "protocol=HTTP/1.1",
		"code:int=304", "size:int=0"},
	{"host=10.0.0.9", "user=-", "time:time=2026-12-02T08:00:03Z", "method=-", "code:int=408", "size:null", "referer=-", "agent=-"},
	{"host=203.0.113.7", "user=-", "time:time=2026-12-02T07:00:04Z", "method=GET", `path=/search?q=\"x\"`, "protocol=HTTP/1.1",
		"code:int=200", "size:int=512", "referer=-", `agent=Mozilla/5.0 (X11; Linux x86_64) \"quoted\" agent`},
	nil, // "this is not an apache line"
}

func TestLineApacheCombinedAccess8(t *testing.T) {
	lines := fixtureLines(t, "access-8.log")
	if len(lines) != len(access8Combined) {
		t.Fatalf("access-8.log has %d lines, want %d", len(lines), len(access8Combined))
	}
	var cases []lineCase
	for i, line := range lines {
		cases = append(cases, lineCase{name: "line" + string(rune('1'+i)), line: line, want: access8Combined[i]})
	}
	runLineCases(t, mustLineParser(t, "apache_combined", ""), cases)
}

func TestLineApacheCombinedTricky(t *testing.T) {
	head := `1.2.3.4 - - [01/Jun/2024:10:00:00 +0000] `
	base := []string{"host=1.2.3.4", "user=-", "time:time=2024-06-01T10:00:00Z"}
	with := func(fields ...string) []string { return append(append([]string{}, base...), fields...) }
	runLineCases(t, mustLineParser(t, "apache_combined", ""), []lineCase{
		{"ipv6 host", `2001:db8::ff00:42:8329 ident bob [01/Jun/2024:10:00:00 +0000] "GET / HTTP/2.0" 200 5 "-" "-"`,
			[]string{"host=2001:db8::ff00:42:8329", "user=bob", "time:time=2024-06-01T10:00:00Z", "method=GET", "path=/", "protocol=HTTP/2.0",
				"code:int=200", "size:int=5", "referer=-", "agent=-"}},
		{"non-UTC offset", `h - - [31/Dec/2023:23:30:00 -0130] "GET / HTTP/1.1" 200 1`,
			[]string{"host=h", "user=-", "time:time=2024-01-01T01:00:00Z", "method=GET", "path=/", "protocol=HTTP/1.1", "code:int=200", "size:int=1"}},
		{"positive offset", `h - - [01/Jan/2024:05:30:00 +0530] "GET / HTTP/1.1" 200 1`,
			[]string{"host=h", "user=-", "time:time=2024-01-01T00:00:00Z", "method=GET", "path=/", "protocol=HTTP/1.1", "code:int=200", "size:int=1"}},
		{"utf-8 path", head + `"GET /caf├й/цены?q=日本 HTTP/1.1" 200 10 "-" "agent ünï"`,
			with("method=GET", "path=/caf├й/цены?q=日本", "protocol=HTTP/1.1", "code:int=200", "size:int=10", "referer=-", "agent=agent ünï")},
		{"escaped quotes everywhere", head + `"GET /a\"b HTTP/1.1" 200 1 "http://x/\"r\"" "say \"hi\" \\"`,
			with("method=GET", `path=/a\"b`, "protocol=HTTP/1.1", "code:int=200", "size:int=1", `referer=http://x/\"r\"`, `agent=say \"hi\" \\`)},
		{"dash size and code", head + `"GET / HTTP/1.1" - - "-" "-"`,
			with("method=GET", "path=/", "protocol=HTTP/1.1", "code:null", "size:null", "referer=-", "agent=-")},
		{"non-numeric size kept", head + `"GET / HTTP/1.1" 200 12k`,
			with("method=GET", "path=/", "protocol=HTTP/1.1", "code:int=200", "size=12k")},
		{"dash request", head + `"-" 408 -`, with("method=-", "code:int=408", "size:null")},
		{"empty request", head + `"" 400 0`, with("code:int=400", "size:int=0")},
		{"method only", head + `"GET" 400 0`, with("method=GET", "code:int=400", "size:int=0")},
		{"http/0.9 request", head + `"GET /old" 200 0`, with("method=GET", "path=/old", "code:int=200", "size:int=0")},
		{"space in path", head + `"GET /a b HTTP/1.1" 400 0`, with("method=GET", "path=/a b", "protocol=HTTP/1.1", "code:int=400", "size:int=0")},
		{"tls garbage request", head + `"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" 400 226 "-" "-"`,
			with(`method=\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03`, "code:int=400", "size:int=226", "referer=-", "agent=-")},
		{"crlf line end", head + `"GET / HTTP/1.1" 200 1` + "\r\n", with("method=GET", "path=/", "protocol=HTTP/1.1", "code:int=200", "size:int=1")},
		{"empty referer and agent", head + `"GET / HTTP/1.1" 200 1 "" ""`,
			with("method=GET", "path=/", "protocol=HTTP/1.1", "code:int=200", "size:int=1", "referer=", "agent=")},

		{"empty line", "", nil},
		{"not apache", "this is not an apache line", nil},
		{"binary garbage", "\x00\xff\xfe[\"\x01 \" ]] \xc3\x28", nil},
		{"truncated in time", `1.2.3.4 - - [01/Jun/2024:10:00`, nil},
		{"truncated in request", head + `"GET /index.ht`, nil},
		{"truncated after request", head + `"GET / HTTP/1.1"`, nil},
		{"truncated after code", head + `"GET / HTTP/1.1" 200`, nil},
		{"truncated in referer", head + `"GET / HTTP/1.1" 200 1 "http://x`, nil},
		{"referer without agent", head + `"GET / HTTP/1.1" 200 1 "-"`, nil},
		{"extra field after agent", head + `"GET / HTTP/1.1" 200 1 "-" "-" "10.0.0.1"`, nil},
		{"bad month", `1.2.3.4 - - [01/Foo/2024:10:00:00 +0000] "GET / HTTP/1.1" 200 1`, nil},
		{"bad day", `1.2.3.4 - - [31/Feb/2024:10:00:00 +0000] "GET / HTTP/1.1" 200 1`, nil},
		{"bad offset", `1.2.3.4 - - [01/Jun/2024:10:00:00 0000] "GET / HTTP/1.1" 200 1`, nil},
		{"no quote before request", head + `GET / HTTP/1.1 200 1`, nil},
	})
}

func TestLineApacheCommon(t *testing.T) {
	p := mustLineParser(t, "apache_common", "")
	runLineCases(t, p, []lineCase{
		{"common", `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
			[]string{"host=127.0.0.1", "user=frank", "time:time=2000-10-10T20:55:36Z", "method=GET", "path=/apache_pb.gif",
				"protocol=HTTP/1.0", "code:int=200", "size:int=2326"}},
		{"combined is rejected", `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326 "-" "-"`, nil},
	})
	if got := p.Types(); !reflect.DeepEqual(got, map[string]Kind{"code": KindInt, "size": KindInt}) {
		t.Errorf("Types() = %v", got)
	}
}

func TestLineNginxAccess(t *testing.T) {
	runLineCases(t, mustLineParser(t, "nginx_access", ""), []lineCase{
		{"combined", `10.0.0.5 - alice [02/Dec/2026:08:00:00 +0000] "POST /api HTTP/2.0" 201 - "https://example.org/" "curl/8.5.0"`,
			[]string{"remote=10.0.0.5", "host=-", "user=alice", "time:time=2026-12-02T08:00:00Z", "method=POST", "path=/api",
				"protocol=HTTP/2.0", "code:int=201", "size:null", "referer=https://example.org/", "agent=curl/8.5.0"}},
		{"main format with x-forwarded-for", `10.0.0.5 - - [02/Dec/2026:08:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0" "203.0.113.9"`,
			[]string{"remote=10.0.0.5", "host=-", "user=-", "time:time=2026-12-02T08:00:00Z", "method=GET", "path=/",
				"protocol=HTTP/1.1", "code:int=200", "size:int=612", "referer=-", "agent=curl/8.5.0"}},
		{"no referer and agent", `::1 - - [02/Dec/2026:08:00:02 +0000] "GET /index.html HTTP/1.1" 304 0`,
			[]string{"remote=::1", "host=-", "user=-", "time:time=2026-12-02T08:00:02Z", "method=GET", "path=/index.html",
				"protocol=HTTP/1.1", "code:int=304", "size:int=0"}},
		{"not nginx", "this is not an nginx line", nil},
	})
}

// TestLineApacheCombinedAccess5000 parses every line of access-5000.log and
// checks each against Fluent Bit's stock apache2 parser.
func TestLineApacheCombinedAccess5000(t *testing.T) {
	lines := fixtureLines(t, "access-5000.log")
	if len(lines) != 5000 {
		t.Fatalf("access-5000.log has %d lines, want 5000", len(lines))
	}
	p := mustLineParser(t, "apache_combined", "")
	for i, line := range lines {
		compareWithStock(t, i+1, line, p, stockApache2)
	}
}

// TestLineStockOracles checks both scanners against the stock regexes on the
// fixture lines that the stock parsers match.
func TestLineStockOracles(t *testing.T) {
	lines := append(fixtureLines(t, "access-8.log"), fixtureLines(t, "access-5000.log")[:500]...)
	for i, line := range lines {
		if stockApache2.MatchString(line) {
			compareWithStock(t, i+1, line, mustLineParser(t, "apache_combined", ""), stockApache2)
		}
		if stockNginx.MatchString(line) {
			compareWithStock(t, i+1, line, mustLineParser(t, "nginx_access", ""), stockNginx)
		}
	}
}

// compareWithStock parses line with p and checks that it gives the fields of
// the stock regex stock (which must match), with code and size as integers
// and the time as the same instant.
func compareWithStock(t *testing.T, n int, line string, p LineParser, stock *regexp.Regexp) {
	t.Helper()
	m := stock.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %d: stock parser does not match %q", n, line)
	}
	want := map[string]string{}
	for i, name := range stock.SubexpNames() {
		if name != "" && stock.SubexpIndex(name) == i && m[i] != "" {
			want[name] = m[i]
		}
	}
	stamp, err := time.Parse("02/Jan/2006:15:04:05 -0700", want["time"])
	if err != nil {
		t.Fatalf("line %d: stock time %q: %v", n, want["time"], err)
	}
	want["time"] = stamp.UTC().Format(time.RFC3339Nano)

	var rec lineRecorder
	if err := p.Parse(line, &rec); err != nil {
		t.Fatalf("line %d: %v\n%s", n, err, line)
	}
	got := map[string]string{}
	for _, f := range rec.got {
		key, val, _ := strings.Cut(f, "=")
		key, kind, _ := strings.Cut(key, ":")
		switch {
		case key == "protocol":
			continue // the stock parsers drop it
		case kind == "null":
			val = "-"
		}
		if val != "" {
			got[key] = val
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("line %d: %q\n got %v\nwant %v", n, line, got, want)
	}
}
