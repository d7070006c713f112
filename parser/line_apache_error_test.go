package parser

import (
	"reflect"
	"testing"
)

func TestLineApacheError(t *testing.T) {
	p := mustLineParser(t, "apache_error", "")
	runLineCases(t, p, []lineCase{
		{"2.4 full", `[Wed Oct 11 14:32:52.123456 2000] [core:error] [pid 1234:tid 5678] [client 1.2.3.4:5678] AH00123: message`,
			[]string{"time:time=2000-10-11T14:32:52.123456Z", "module=core", "level=error", "pid:int=1234", "tid:int=5678",
				"client=1.2.3.4:5678", "message=AH00123: message"}},
		{"2.2", `[Wed Oct 11 14:32:52 2000] [error] [client 127.0.0.1] client denied by server configuration: /export/home/live/ap/htdocs/test`,
			[]string{"time:time=2000-10-11T14:32:52Z", "level=error", "client=127.0.0.1",
				"message=client denied by server configuration: /export/home/live/ap/htdocs/test"}},
		{"pid without tid, no client", `[Sun Jun 02 08:00:01.5 2024] [mpm_event:notice] [pid 42] AH00489: Apache/2.4.57 (Unix) configured -- resuming normal operations`,
			[]string{"time:time=2024-06-02T08:00:01.5Z", "module=mpm_event", "level=notice", "pid:int=42",
				"message=AH00489: Apache/2.4.57 (Unix) configured -- resuming normal operations"}},
		{"single-digit day padded", `[Sat Jun  1 08:00:01 2024] [warn] [client ::1] x`,
			[]string{"time:time=2024-06-01T08:00:01Z", "level=warn", "client=::1", "message=x"}},
		{"client after error text stays in message", `[Tue Mar 14 10:00:00.1 2023] [proxy_http:error] [pid 7:tid 8] (70007)The timeout specified has expired: [client 10.0.0.1:5000] AH01102: error reading status line`,
			[]string{"time:time=2023-03-14T10:00:00.1Z", "module=proxy_http", "level=error", "pid:int=7", "tid:int=8",
				"message=(70007)The timeout specified has expired: [client 10.0.0.1:5000] AH01102: error reading status line"}},
		{"utf-8 message", `[Wed Oct 11 14:32:52 2000] [error] 文件不存在: /var/www/ü`,
			[]string{"time:time=2000-10-11T14:32:52Z", "level=error", "message=文件不存在: /var/www/ü"}},
		{"no message", `[Wed Oct 11 14:32:52 2000] [error]`,
			[]string{"time:time=2000-10-11T14:32:52Z", "level=error", "message="}},

		{"empty line", "", nil},
		{"access line", `127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1`, nil},
		{"bad time", `[yesterday] [error] x`, nil},
		{"no level", `[Wed Oct 11 14:32:52 2000] x`, nil},
		{"unterminated level", `[Wed Oct 11 14:32:52 2000] [error`, nil},
		{"unterminated pid", `[Wed Oct 11 14:32:52 2000] [error] [pid 12`, nil},
		{"no space before message", `[Wed Oct 11 14:32:52 2000] [error]x`, nil},
		{"binary garbage", "[\x00\xff] [\x01]", nil},
	})
	if got := p.Types(); !reflect.DeepEqual(got, map[string]Kind{"time": KindTime, "pid": KindInt}) {
		t.Errorf("Types() = %v", got)
	}
}
