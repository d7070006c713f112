package parser

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func date(s string) bson.DateTime {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return bson.NewDateTimeFromTime(t)
}

// JSON and logfmt lines give their time under the time key: with
// time_from_log on it is the record time, with it off a date under its own
// name. A line with no time there, under time_from_log, is kept as a line
// that does not parse, with Fluent Bit's time.
func TestDecodeLineTime(t *testing.T) {
	fbTime := time.Unix(5, 0).UTC()
	cases := []struct {
		name     string
		line     LineConfig
		format   string
		fromLog  bool
		log      string
		wantTime time.Time // the record time
		want     bson.D    // the document after ts
		failed   bool
	}{
		{"json iso from log", LineConfig{Name: "json"}, "", true,
			`{"time":"2024-06-01T10:00:00.123Z","msg":"a"}`, time.Date(2024, 6, 1, 10, 0, 0, 123e6, time.UTC), D("msg", "a"), false},
		{"json iso kept", LineConfig{Name: "json"}, "", false,
			`{"time":"2024-06-01T10:00:00.123+02:00","msg":"a"}`, fbTime, D("time", date("2024-06-01T08:00:00.123Z"), "msg", "a"), false},
		{"json epoch from log", LineConfig{Name: "json", Epoch: true}, "", true,
			`{"msg":"a","time":1717236000.5}`, time.Date(2024, 6, 1, 10, 0, 0, 5e8, time.UTC), D("msg", "a"), false},
		{"json custom key and format", LineConfig{Name: "json", TimeKey: "at"}, "%d/%b/%Y:%H:%M:%S %z", true,
			`{"at":"10/Oct/2000:13:55:36 -0700","time":"x"}`, time.Date(2000, 10, 10, 20, 55, 36, 0, time.UTC), D("time", "x"), false},
		{"logfmt from log", LineConfig{Name: "logfmt"}, "", true,
			`time=2024-06-01T10:00:00Z level=info`, time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC), D("level", "info"), false},
		{"logfmt custom key kept", LineConfig{Name: "logfmt", TimeKey: "ts"}, "%Y-%m-%d %H:%M:%S", false,
			`ts="2024-06-01 10:00:00" level=info`, fbTime, D("_ts", date("2024-06-01T10:00:00Z"), "level", "info"), false},

		// No time under time_from_log: the raw line, the reason, Fluent Bit's time.
		{"json unreadable time", LineConfig{Name: "json"}, "", true,
			`{"time":"soon","msg":"a"}`, fbTime, D("log", `{"time":"soon","msg":"a"}`, "_parse_error", noTime("time")), true},
		{"json no time", LineConfig{Name: "json"}, "", true,
			`{"msg":"a","m":{"time":"2024-06-01T10:00:00Z"}}`, fbTime, D("log", `{"msg":"a","m":{"time":"2024-06-01T10:00:00Z"}}`, "_parse_error", noTime("time")), true},
		{"json milliseconds", LineConfig{Name: "json"}, "", true,
			`{"time":1717236000123}`, fbTime, D("log", `{"time":1717236000123}`, "_parse_error", noTime("time")), true},
		{"logfmt not the format", LineConfig{Name: "logfmt", TimeKey: "ts"}, "%s", true,
			`ts=2024-06-01 a=1`, fbTime, D("log", `ts=2024-06-01 a=1`, "_parse_error", noTime("ts")), true},
		{"regex without a time", LineConfig{Name: "regex", Regex: `^(?P<time>\S+)? ?(?P<msg>.*)$`}, "", true,
			`hello`, fbTime, D("log", "hello", "_parse_error", noTime("time")), true},
		{"regex with a time", LineConfig{Name: "regex", Regex: `^(?P<time>\S+) (?P<msg>.*)$`}, "", true,
			`2024-06-01T10:00:00Z hello`, time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC), D("msg", "hello"), false},
		{"json epoch kept a number", LineConfig{Name: "json"}, "", false,
			`{"time":12.5}`, fbTime, D("time", 12.5), false},
		// Without time_from_log a line without a time is an ordinary line.
		{"json no time kept", LineConfig{Name: "json"}, "", false,
			`{"time":"soon"}`, fbTime, D("time", "soon"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustDecoder(t, Options{Line: mustLine(t, c.line, c.format), ParseKey: "log", TimeFromLog: c.fromLog})
			b := decode(t, d, rec(t, evt(5, 0), kv{}, kv{"log", c.log}))
			if len(b.Records) != 1 {
				t.Fatalf("%d records", len(b.Records))
			}
			r := b.Records[0]
			if !r.Time.Equal(c.wantTime) || r.ParseFailed != c.failed || b.ParseFailures != map[bool]int{true: 1}[c.failed] {
				t.Errorf("time %v, parse failed %v (%d); want %v, %v", r.Time, r.ParseFailed, b.ParseFailures, c.wantTime, c.failed)
			}
			doc := toD(t, r.Doc)
			if doc[0].Key != "ts" || doc[0].Value != bson.NewDateTimeFromTime(c.wantTime) {
				t.Errorf("ts %v, want %v", doc[0], c.wantTime)
			}
			if !reflect.DeepEqual(doc[1:], c.want) {
				t.Errorf("document %v, want %v", doc[1:], c.want)
			}
		})
	}
}

func noTime(key string) string {
	return "time_from_log: the line has no \"" + key + "\" field that reads as a time; the record keeps Fluent Bit's time"
}

// types F:time converts ISO 8601 strings and seconds since 1970 (integer or
// float, as strings or numbers), in the record and in the top-level fields
// of a parsed line; a value that does not convert stays as it is.
func TestDecodeTypesTime(t *testing.T) {
	types := map[string]Kind{"a": KindTime, "b": KindTime, "c": KindTime, "d": KindTime, "e": KindTime, "f": KindTime,
		"g": KindTime, "h": KindTime, "cost": KindInt}
	in := kv{
		"a", "2024-06-01T10:00:00Z",
		"b", "2024-06-01T10:00:00.123456+02:00",
		"c", "2024-06-01 10:00:00.5",
		"d", 1717236000,
		"e", 1717236000.25,
		"f", "1717236000.75",
		"g", "soon",
		"h", int64(1717236000123), // milliseconds: not a time in seconds
		"cost", "12",
	}
	want := D("a", date("2024-06-01T10:00:00Z"), "b", date("2024-06-01T08:00:00.123Z"), "c", date("2024-06-01T10:00:00.5Z"),
		"d", date("2024-06-01T10:00:00Z"), "e", date("2024-06-01T10:00:00.25Z"), "f", date("2024-06-01T10:00:00.75Z"),
		"g", "soon", "h", int64(1717236000123), "cost", int32(12))
	d := mustDecoder(t, Options{Types: types})
	if got := body(t, d, rec(t, evt(1, 0), kv{}, in)); !reflect.DeepEqual(got, want) {
		t.Errorf("record fields:\n got %v\nwant %v", got, want)
	}

	// The same values in a JSON line, and as logfmt (all strings there).
	line := `{"a":"2024-06-01T10:00:00Z","b":"2024-06-01T10:00:00.123456+02:00","c":"2024-06-01 10:00:00.5",` +
		`"d":1717236000,"e":1717236000.25,"f":"1717236000.75","g":"soon","h":1717236000123,"cost":"12","m":{"a":"2024-06-01T10:00:00Z"}}`
	d = mustDecoder(t, Options{Types: types, Line: mustLineParser(t, "json", ""), ParseKey: "log"})
	wantJSON := append(append(bson.D{}, want...), bson.E{Key: "m", Value: D("a", "2024-06-01T10:00:00Z")})
	if got := body(t, d, rec(t, evt(1, 0), kv{}, kv{"log", line})); !reflect.DeepEqual(got, wantJSON) {
		t.Errorf("json line fields:\n got %v\nwant %v", got, wantJSON)
	}
	logfmt := `a=2024-06-01T10:00:00Z b=2024-06-01T10:00:00.123456+02:00 c="2024-06-01 10:00:00.5" d=1717236000 ` +
		`e=1717236000.25 f=1717236000.75 g=soon h=1717236000123 cost=12`
	wantLogfmt := append(append(bson.D{}, want[:7]...), bson.E{Key: "h", Value: "1717236000123"}, bson.E{Key: "cost", Value: int32(12)})
	d = mustDecoder(t, Options{Types: types, Line: mustLineParser(t, "logfmt", ""), ParseKey: "log"})
	if got := body(t, d, rec(t, evt(1, 0), kv{}, kv{"log", logfmt})); !reflect.DeepEqual(got, wantLogfmt) {
		t.Errorf("logfmt line fields:\n got %v\nwant %v", got, wantLogfmt)
	}
}

// A types entry naming a field the access-log parser types itself does not
// loop: the parser's own conversion stands, a value that does not convert
// stays a string.
func TestDecodeTypesLineParserOwn(t *testing.T) {
	d := mustDecoder(t, Options{Types: map[string]Kind{"code": KindInt, "host": KindInt}, Line: mustLineParser(t, "apache_common", ""), ParseKey: "log"})
	got := body(t, d, rec(t, evt(1, 0), kv{}, kv{"log", `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" abc 5`}))
	if !reflect.DeepEqual(got[0], bson.E{Key: "host", Value: "127.0.0.1"}) {
		t.Errorf("host %v", got[0])
	}
	for _, e := range got {
		if e.Key == "code" && e.Value != "abc" {
			t.Errorf("code %v, want the string abc", e.Value)
		}
	}
	if !strings.Contains(got.String(), `"size"`) {
		t.Errorf("fields %v", got)
	}
}
