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
