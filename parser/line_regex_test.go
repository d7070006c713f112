package parser

import "testing"

func TestLineRegex(t *testing.T) {
	p := mustLineParser(t, "regex", `^(?P<time>\S+ \S+) (?<level>[A-Z]+)(?: \[(?<thread>[^\]]+)\])? (?P<msg>.*)$`)
	runLineCases(t, p, []lineCase{
		{"datetime", `2024-06-01 10:00:00.250 INFO [main] started`,
			[]string{"time:time=2024-06-01T10:00:00.25Z", "level=INFO", "thread=main", "msg=started"}},
		{"optional group omitted", `2024-06-01 10:00:00 WARN low disk`,
			[]string{"time:time=2024-06-01T10:00:00Z", "level=WARN", "msg=low disk"}},
		{"unparsable time kept as string", `day one ERROR boom`,
			[]string{"time=day one", "level=ERROR", "msg=boom"}},
		{"no match", "nothing here", nil},
		{"empty line", "", nil},
	})
	if p.Types() != nil {
		t.Errorf("Types() = %v, want nil", p.Types())
	}

	clf := mustLineParser(t, "regex", `^(?<host>\S+) \S+ (?<user>\S+) \[(?<time>[^\]]+)\] "(?<request>[^"]*)"`)
	runLineCases(t, clf, []lineCase{
		{"clf time", `::1 - bob [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 1`,
			[]string{"host=::1", "user=bob", "time:time=2000-10-10T20:55:36Z", "request=GET / HTTP/1.1"}},
	})
	rfc := mustLineParser(t, "regex", `^(?<time>\S+) (?<rest>.*)`)
	runLineCases(t, rfc, []lineCase{
		{"rfc3339 offset", `2024-06-01T12:00:00+02:00 x`, []string{"time:time=2024-06-01T10:00:00Z", "rest=x"}},
		{"rfc3339nano", `2024-06-01T10:00:00.123456789Z x`, []string{"time:time=2024-06-01T10:00:00.123456789Z", "rest=x"}},
	})
}
