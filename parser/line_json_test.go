package parser

import (
	"strings"
	"testing"
)

func TestLineJSON(t *testing.T) {
	deep, deepWant := nestedJSON(MaxDepth)
	tooDeep, _ := nestedJSON(MaxDepth + 1)
	runLineCases(t, mustLineParser(t, "json", ""), []lineCase{
		{"app line", `{"ts": "2024-06-01T10:00:00.000Z", "level": "error", "module": "user", "traceId": "79356bae", "msg": "下游接口超时", "cost": 1992, "seq": 0}`,
			[]string{"ts=2024-06-01T10:00:00.000Z", "level=error", "module=user", "traceId=79356bae", "msg=下游接口超时", "cost:int=1992", "seq:int=0"}},
		{"order kept", `{"z":1,"a":2,"m":3}`, []string{"z:int=1", "a:int=2", "m:int=3"}},
		{"numbers", `{"i":-42,"big":9223372036854775808,"f":1.5,"e":1e3,"z":-0,"huge":1e400}`,
			[]string{"i:int=-42", "big:float=9.223372036854776e+18", "f:float=1.5", "e:float=1000", "z:int=0", "huge=1e400"}},
		{"nested", `{"m":{"a":[1,"x",null,true,{"k":false},[]]},"n":null}`,
			[]string{"m:{", "a:[", ":int=1", "=x", ":null", ":bool=true", ":{", "k:bool=false", "}", ":[", "]", "]", "}", "n:null"}},
		{"escapes", `{"s":"a\"b\\c\u00e9\n"}`, []string{"s=a\"b\\cé\n"}},
		{"empty object", `{}`, []string{}},
		{"surrounding space", " \t{\"a\":1}\r\n", []string{"a:int=1"}},
		{"deepest allowed", deep, deepWant},

		{"too deep", tooDeep, nil},
		{"empty line", "", nil},
		{"array", `[1,2]`, nil},
		{"string", `"x"`, nil},
		{"number", `42`, nil},
		{"truncated", `{"a":1,"b":{"c":`, nil},
		{"truncated string", `{"a":"xyz`, nil},
		{"trailing object", `{"a":1}{"b":2}`, nil},
		{"trailing garbage", `{"a":1} x`, nil},
		{"missing comma", `{"a":1 "b":2}`, nil},
		{"plain text", "this is not json", nil},
		{"binary garbage", "{\x00\xff}", nil},
	})
}

// nestedJSON returns an object nested depth levels deep, {"a":{"a":...1}},
// and the fields it gives.
func nestedJSON(depth int) (line string, want []string) {
	line = strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	for i := 1; i < depth; i++ {
		want = append(want, "a:{")
	}
	want = append(want, "a:int=1")
	for i := 1; i < depth; i++ {
		want = append(want, "}")
	}
	return line, want
}
