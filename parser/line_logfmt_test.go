package parser

import "testing"

func TestLineLogfmt(t *testing.T) {
	runLineCases(t, mustLineParser(t, "logfmt", ""), []lineCase{
		{"basic", `key=value key2="quoted \"value\"" flag`,
			[]string{"key=value", `key2=quoted "value"`, "flag:bool=true"}},
		{"typical", `ts=2024-06-01T10:00:00Z level=info msg="request handled" cost=855 path=/a?b=c`,
			[]string{"ts=2024-06-01T10:00:00Z", "level=info", "msg=request handled", "cost=855", "path=/a?b=c"}},
		{"empty values", `a= b="" c`, []string{"a=", "b=", "c:bool=true"}},
		{"escapes", `m="a\\b\nc\td\q"`, []string{"m=a\\b\nc\td\\q"}},
		{"padding in value", `token=abc== x=1`, []string{"token=abc==", "x=1"}},
		{"extra spaces and tabs", " \ta=1 \t b=2  \r\n", []string{"a=1", "b=2"}},
		{"utf-8", `msg="下游接口超时" user=ünï`, []string{"msg=下游接口超时", "user=ünï"}},
		{"duplicate keys kept", `a=1 a=2`, []string{"a=1", "a=2"}},

		{"unterminated quote", `a=1 msg="oops`, nil},
		{"escaped closing quote", `msg="oops\"`, nil},
		{"missing key", `=value`, nil},
		{"quote in key", `a"b=1`, nil},
		{"quote in bare value", `a=b"c`, nil},
		{"text after quote", `a="b"c`, nil},
		{"no pair", "this is plain text", nil},
		{"empty line", "", nil},
		{"only spaces", "   ", nil},
	})
}

func TestLineLogfmtTime(t *testing.T) {
	def := mustLine(t, LineConfig{Name: "logfmt", Epoch: true}, "")
	if def.TimeKey() != "time" {
		t.Errorf("default time key %q, want time", def.TimeKey())
	}
	runLineCases(t, def, []lineCase{
		{"iso", `time=2024-06-01T10:00:00Z level=info msg="a b"`, []string{"time:time=2024-06-01T10:00:00Z", "level=info", "msg=a b"}},
		{"quoted with space", `level=info time="2024-06-01 10:00:00.5 +02:00"`, []string{"level=info", "time:time=2024-06-01T08:00:00.5Z"}},
		{"epoch", `time=1717236000.25`, []string{"time:time=2024-06-01T10:00:00.25Z"}},
		{"not a time", `time=soon a=1`, []string{"time=soon", "a=1"}},
		{"bare key", `time a=1`, []string{"time:bool=true", "a=1"}},
	})
	plain := mustLine(t, LineConfig{Name: "logfmt"}, "")
	runLineCases(t, plain, []lineCase{
		{"a number stays without time_from_log", `time=12.5`, []string{"time=12.5"}},
	})
	custom := mustLine(t, LineConfig{Name: "logfmt", TimeKey: "ts"}, "%Y-%m-%dT%H:%M:%S.%L%z")
	runLineCases(t, custom, []lineCase{
		{"format", `ts=2024-06-01T10:00:00.123+0200 time=x`, []string{"ts:time=2024-06-01T08:00:00.123Z", "time=x"}},
		{"not the format", `ts=2024-06-01T10:00:00Z`, []string{"ts=2024-06-01T10:00:00Z"}},
	})
}
