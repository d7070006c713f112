package e2e

// JSON and logfmt lines carry their own time: with time_from_log on the
// plugin stores each record at its line's time, so lines spanning 20
// minutes land in 20 one-minute windows whatever time Fluent Bit gave them.

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// lineEntries returns the entries of coll (bucket entries, or flat
// documents) by id, and for buckets the window start of each id.
func (e *env) lineEntries(coll string) (entries map[string]bson.Raw, starts map[string]time.Time) {
	e.t.Helper()
	entries, starts = map[string]bson.Raw{}, map[string]time.Time{}
	for _, d := range e.all(coll) {
		logs, ok := d.Lookup("logs").ArrayOK()
		if !ok {
			id, _ := d.Lookup("id").StringValueOK()
			entries[id] = d
			continue
		}
		vals, err := logs.Values()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, v := range vals {
			id, _ := v.Document().Lookup("id").StringValueOK()
			entries[id] = bson.Raw(v.Document())
			starts[id] = d.Lookup("start").Time()
		}
	}
	return entries, starts
}

func TestLineTimeFromLog(t *testing.T) {
	// Fluent Bit's time for every record: far from the lines' times.
	ingest := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	base := time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC)
	const n = 200
	step := 20 * time.Minute / n // 200 lines over 20 minutes
	paris := time.FixedZone("", 2*3600)
	cases := []struct {
		name  string
		props []string
		line  func(i int, at time.Time) string
	}{
		{"json default", []string{"parser", "json"}, func(i int, at time.Time) string {
			// RFC 3339 in UTC and with an offset, with and without a fraction, no zone, a space.
			stamp := []string{
				at.Format("2006-01-02T15:04:05.000Z07:00"),
				at.In(paris).Format("2006-01-02T15:04:05.999999-07:00"),
				at.Format("2006-01-02T15:04:05.000"),
				at.In(paris).Format("2006-01-02 15:04:05.000-0700"),
			}[i%4]
			return fmt.Sprintf(`{"time":%q,"id":"L%d","msg":"m"}`, stamp, i)
		}},
		{"json epoch", []string{"parser", "json"}, func(i int, at time.Time) string {
			return fmt.Sprintf(`{"id":"L%d","time":%d.%03d}`, i, at.Unix(), at.Nanosecond()/1e6)
		}},
		{"json key and format", []string{"parser", "json", "parse_time_key", "at", "parse_time_format", "%d/%b/%Y:%H:%M:%S %z"}, func(i int, at time.Time) string {
			return fmt.Sprintf(`{"at":%q,"id":"L%d","time":"not this one"}`, at.In(time.FixedZone("", -7*3600)).Format("02/Jan/2006:15:04:05 -0700"), i)
		}},
		{"logfmt format", []string{"parser", "logfmt", "parse_time_key", "ts", "parse_time_format", "%Y-%m-%dT%H:%M:%S.%L%z"}, func(i int, at time.Time) string {
			return fmt.Sprintf(`ts=%s id=L%d msg="a b"`, at.In(paris).Format("2006-01-02T15:04:05.000-0700"), i)
		}},
	}
	for _, c := range cases {
		for _, mode := range deliveryModes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				e := newEnv(t)
				var recs [][]byte
				want := map[string]time.Time{}
				for i := range n {
					at := base.Add(time.Duration(i) * step)
					if c.name == "json key and format" {
						at = at.Truncate(time.Second) // the format has no fraction
					}
					if i%3 == 1 && c.name != "json key and format" {
						at = at.Add(123 * time.Millisecond)
					}
					id := fmt.Sprintf("L%d", i)
					want[id] = at
					recs = append(recs, record(t, ingest, kv{"log", c.line(i, at)}))
				}
				// A line without a time: stored whole, with the reason, at Fluent Bit's time.
				recs = append(recs, record(t, ingest, kv{"log", `{"id":"none","msg":"no time"}`}))
				chunk := chunkFile(t, t.TempDir(), "lines", recs...)
				e.init("a", e.props(append([]string{"mode", mode, "time_from_log", "on"}, c.props...)...))
				e.mustFlush("a", "app", chunk)
				e.exit("a")

				entries, starts := e.lineEntries("logs")
				windows := map[time.Time]int{}
				for id, at := range want {
					en, ok := entries[id]
					if !ok {
						t.Errorf("%s not stored", id)
						continue
					}
					if ts := en.Lookup("ts").Time(); !ts.Equal(at.Truncate(time.Millisecond)) {
						t.Errorf("%s: ts %v, want the line's time %v", id, ts.UTC(), at)
					}
					if mode == "bucket" {
						if start := starts[id]; !start.Equal(at.Truncate(time.Minute)) {
							t.Errorf("%s at %v in the window starting %v", id, at, start.UTC())
						}
						windows[starts[id]]++
					}
				}
				if mode == "bucket" && len(windows) != 20 {
					t.Errorf("%d windows, want 20: %v", len(windows), windows)
				}
				for w, k := range windows {
					if k != n/20 {
						t.Errorf("window %v holds %d lines, want %d", w.UTC(), k, n/20)
					}
				}
				var raw bson.Raw
				for _, d := range e.all("logs") {
					if d.Lookup("log").Type != 0 {
						raw = d
					}
					if logs, ok := d.Lookup("logs").ArrayOK(); ok {
						vals, _ := logs.Values()
						for _, v := range vals {
							if v.Document().Lookup("log").Type != 0 {
								raw = bson.Raw(v.Document())
							}
						}
					}
				}
				if raw == nil {
					t.Fatal("the line without a time is not stored whole")
				}
				if s, _ := raw.Lookup("log").StringValueOK(); s != `{"id":"none","msg":"no time"}` {
					t.Errorf("raw line %q", s)
				}
				if s, _ := raw.Lookup("_parse_error").StringValueOK(); s == "" {
					t.Errorf("no _parse_error: %v", raw)
				}
				if ts := raw.Lookup("ts").Time(); !ts.Equal(ingest) {
					t.Errorf("line without a time at %v, want Fluent Bit's %v", ts.UTC(), ingest)
				}
				if len(entries) != n+1 {
					t.Errorf("%d records stored, want %d", len(entries), n+1)
				}
			})
		}
	}
}

// With time_from_log off the line's time is a date under its own name and
// the record keeps Fluent Bit's time; types F:time converts ISO 8601
// strings and seconds since 1970, strings or numbers, in the record and in
// a parsed line.
func TestLineTimeAsField(t *testing.T) {
	ingest := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := time.Date(2024, 6, 1, 10, 0, 0, 250e6, time.UTC)
	e := newEnv(t)
	chunk := chunkFile(t, t.TempDir(), "c", record(t, ingest,
		kv{"id", "A"},
		kv{"iso", "2024-06-01T12:00:00.250+02:00"},
		kv{"spaced", "2024-06-01 10:00:00.250"},
		kv{"num", 1717236000.25},
		kv{"int", 1717236000},
		kv{"str", "1717236000.25"},
		kv{"log", `{"time":"2024-06-01T10:00:00.250Z","seen":"2024-06-01T10:00:00.250Z","n":1717236000.25,"msg":"m"}`}))
	e.init("a", e.props("mode", "flat", "parser", "json", "types", "iso:time,spaced:time,num:time,int:time,str:time,seen:time,n:time"))
	e.mustFlush("a", "app", chunk)
	e.exit("a")
	docs := e.all("logs")
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	d := docs[0]
	if ts := d.Lookup("ts").Time(); !ts.Equal(ingest) {
		t.Errorf("ts %v, want Fluent Bit's time %v", ts.UTC(), ingest)
	}
	for _, f := range []string{"time", "seen", "n", "iso", "spaced", "num", "str"} {
		if v, ok := d.Lookup(f).TimeOK(); !ok || !v.Equal(at) {
			t.Errorf("%s = %v, want the date %v", f, d.Lookup(f), at)
		}
	}
	if v, ok := d.Lookup("int").TimeOK(); !ok || !v.Equal(at.Truncate(time.Second)) {
		t.Errorf("int = %v, want the date %v", d.Lookup("int"), at.Truncate(time.Second))
	}
}

// The README's classic example: app lines ({"ts": "2024-06-01T10:00:00.000Z",
// "module": ...}) parsed as JSON with parse_time_key ts and time_from_log on
// are stored at their own ts, grouped by module.
func TestLineTimeReadmeExample(t *testing.T) {
	lines := fixtureLinesE2E(t, "app-5000.log")[:300]
	ingest := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs [][]byte
	want := map[string]time.Time{}
	for _, line := range lines {
		var l struct {
			TS  time.Time `json:"ts"`
			Seq int       `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		want[strconv.Itoa(l.Seq)] = l.TS
		recs = append(recs, record(t, ingest, kv{"log", line}))
	}
	e := newEnv(t)
	e.init("a", e.props("parser", "json", "parse_time_key", "ts", "time_from_log", "on", "bucket_key", "module",
		"stats", "cost", "count_by", "level"))
	e.mustFlush("a", "app.log", chunkFile(t, t.TempDir(), "app", recs...))
	e.exit("a")
	n := 0
	for _, d := range e.all("logs") {
		vals, err := d.Lookup("logs").Array().Values()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			en := v.Document()
			seq := strconv.Itoa(int(en.Lookup("seq").AsInt64()))
			if ts := en.Lookup("ts").Time(); !ts.Equal(want[seq]) {
				t.Errorf("seq %s: ts %v, want the line's %v", seq, ts.UTC(), want[seq])
			}
			if _, err := en.LookupErr("_ts"); err == nil {
				t.Errorf("seq %s: the line's ts is also stored as _ts", seq)
			}
			n++
		}
		if start := d.Lookup("start").Time(); start.Year() != 2024 {
			t.Errorf("bucket window %v, want the lines' day", start.UTC())
		}
	}
	if n != len(lines) {
		t.Errorf("%d entries, want %d", n, len(lines))
	}
}

// fixtureLinesE2E reads the lines of a file in testdata.
func fixtureLinesE2E(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}
