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

// mustLine returns the parser c describes with the time format format, or
// stops the test.
func mustLine(t testing.TB, c LineConfig, format string) LineParser {
	t.Helper()
	f, err := ParseTimeFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	c.TimeFormat = f
	p, err := NewLine(c)
	if err != nil || p == nil {
		t.Fatalf("NewLine(%+v) = %v, %v", c, p, err)
	}
	return p
}

// The top-level member named by the time key becomes a Time when it reads
// as one (a string in the format; with the default format under
// time_from_log also a number of seconds); anything else, and the same name
// below the top, stays as it is.
func TestLineJSONTime(t *testing.T) {
	def := mustLine(t, LineConfig{Name: "json", Epoch: true}, "")
	if def.TimeKey() != "time" {
		t.Errorf("default time key %q, want time", def.TimeKey())
	}
	runLineCases(t, def, []lineCase{
		{"iso", `{"time":"2024-06-01T10:00:00.123+02:00","msg":"a"}`, []string{"time:time=2024-06-01T08:00:00.123Z", "msg=a"}},
		{"iso without zone", `{"msg":"a","time":"2024-06-01 10:00:00"}`, []string{"msg=a", "time:time=2024-06-01T10:00:00Z"}},
		{"common log format", `{"time":"10/Oct/2000:13:55:36 -0700"}`, []string{"time:time=2000-10-10T20:55:36Z"}},
		{"apache error log", `{"time":"Wed Oct 11 14:32:52.5 2000"}`, []string{"time:time=2000-10-11T14:32:52.5Z"}},
		{"epoch integer", `{"time":1717236000}`, []string{"time:time=2024-06-01T10:00:00Z"}},
		{"epoch fraction exact", `{"time":1717236000.123}`, []string{"time:time=2024-06-01T10:00:00.123Z"}},
		{"epoch string", `{"time":"1717236000.5"}`, []string{"time:time=2024-06-01T10:00:00.5Z"}},
		{"milliseconds stay a number", `{"time":1717236000123}`, []string{"time:int=1717236000123"}},
		{"not a time", `{"time":"soon"}`, []string{"time=soon"}},
		{"null", `{"time":null}`, []string{"time:null"}},
		{"object", `{"time":{"a":1}}`, []string{"time:{", "a:int=1", "}"}},
		{"nested not the time", `{"m":{"time":"2024-06-01T10:00:00Z"},"a":[{"time":"2024-06-01T10:00:00Z"}]}`,
			[]string{"m:{", "time=2024-06-01T10:00:00Z", "}", "a:[", ":{", "time=2024-06-01T10:00:00Z", "}", "]"}},
		{"other key", `{"ts":"2024-06-01T10:00:00Z"}`, []string{"ts=2024-06-01T10:00:00Z"}},
	})

	custom := mustLine(t, LineConfig{Name: "json", TimeKey: "at"}, "%d/%b/%Y:%H:%M:%S %z")
	if custom.TimeKey() != "at" {
		t.Errorf("time key %q, want at", custom.TimeKey())
	}
	runLineCases(t, custom, []lineCase{
		{"format", `{"at":"10/Oct/2000:13:55:36 -0700","time":"2024-06-01T10:00:00Z"}`,
			[]string{"at:time=2000-10-10T20:55:36Z", "time=2024-06-01T10:00:00Z"}},
		{"iso is not the format", `{"at":"2024-06-01T10:00:00Z"}`, []string{"at=2024-06-01T10:00:00Z"}},
		{"a number is not the format", `{"at":1717236000}`, []string{"at:int=1717236000"}},
	})
	// Without time_from_log a number is not taken for a time: a
	// duration in a field named time stays a number.
	plain := mustLine(t, LineConfig{Name: "json"}, "")
	runLineCases(t, plain, []lineCase{
		{"iso", `{"time":"2024-06-01T10:00:00Z"}`, []string{"time:time=2024-06-01T10:00:00Z"}},
		{"a number stays", `{"time":12.5}`, []string{"time:float=12.5"}},
		{"an integer stays", `{"time":1717236000}`, []string{"time:int=1717236000"}},
		{"a number string stays", `{"time":"1717236000.5"}`, []string{"time=1717236000.5"}},
	})
	epoch := mustLine(t, LineConfig{Name: "json"}, "%s")
	runLineCases(t, epoch, []lineCase{
		{"%s string", `{"time":"1717236000"}`, []string{"time:time=2024-06-01T10:00:00Z"}},
	})
}
