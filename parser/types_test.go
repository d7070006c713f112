package parser

import (
	"reflect"
	"strings"
	"testing"
)

func TestTypeSpec(t *testing.T) {
	good := []struct {
		spec string
		want map[string]Kind
	}{
		{"", map[string]Kind{}},
		{"cost:int,latency:float,ok:bool,at:time,name:string",
			map[string]Kind{"cost": KindInt, "latency": KindFloat, "ok": KindBool, "at": KindTime, "name": KindString}},
		{" cost : INT , latency:Float,, n:integer ,", map[string]Kind{"cost": KindInt, "latency": KindFloat, "n": KindInt}},
	}
	for _, c := range good {
		got, err := ParseTypeSpec(c.spec)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseTypeSpec(%q) = %v, %v; want %v", c.spec, got, err, c.want)
		}
	}

	kinds := "kind must be one of " + AllowedKinds
	bad := []struct{ spec, wantInErr string }{
		{"cost:x", `"cost:x": ` + kinds},
		{"cost", `"cost" is not field:kind`},
		{":int", `":int": the field is empty`},
		{"cost:", `"cost:": ` + kinds},
		{"a:int,a:float", `field "a" is given twice`},
		{"a:time:%Y", `"a:time:%Y": ` + kinds},
	}
	for _, c := range bad {
		got, err := ParseTypeSpec(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.wantInErr) || got != nil {
			t.Errorf("ParseTypeSpec(%q) = %v, %v; want an error saying %q", c.spec, got, err, c.wantInErr)
		}
	}

	// Every bad entry is reported at once.
	_, err := ParseTypeSpec("a:x, b:int, c:y")
	if err == nil || !strings.Contains(err.Error(), `"a:x"`) || !strings.Contains(err.Error(), `"c:y"`) {
		t.Errorf("ParseTypeSpec with two bad entries: %v, want both named", err)
	}
}

func TestTypeEmitTyped(t *testing.T) {
	cases := []struct {
		s    string
		k    Kind
		want string
		ok   bool
	}{
		{"42", KindInt, "v:int=42", true},
		{"-7", KindInt, "v:int=-7", true},
		{"-", KindInt, "v:null", true},
		{"", KindInt, "v:null", true},
		{"4.5", KindInt, "v=4.5", false},
		{"99999999999999999999", KindInt, "v=99999999999999999999", false},
		{"abc", KindInt, "v=abc", false},
		{"1.25", KindFloat, "v:float=1.25", true},
		{"3", KindFloat, "v:float=3", true},
		{"-", KindFloat, "v:null", true},
		{"fast", KindFloat, "v=fast", false},
		{"true", KindBool, "v:bool=true", true},
		{"OFF", KindBool, "v:bool=false", true},
		{"Yes", KindBool, "v:bool=true", true},
		{"no", KindBool, "v:bool=false", true},
		{"1", KindBool, "v:bool=true", true},
		{"0", KindBool, "v:bool=false", true},
		{"-", KindBool, "v:null", true},
		{"maybe", KindBool, "v=maybe", false},
		{"2024-06-01T10:00:00.5+02:00", KindTime, "v:time=2024-06-01T08:00:00.5Z", true},
		{"10/Oct/2000:13:55:36 -0700", KindTime, "v:time=2000-10-10T20:55:36Z", true},
		{"2024-06-01 10:00:00", KindTime, "v:time=2024-06-01T10:00:00Z", true},
		{"Oct 11 14:32:52.123456 2000", KindTime, "v:time=2000-10-11T14:32:52.123456Z", true},
		{"-", KindTime, "v:null", true},
		{"soon", KindTime, "v=soon", false},
		{"-", KindString, "v=-", true},
		{"x", KindString, "v=x", true},
		{"x", Kind(200), "v=x", false},
	}
	for _, c := range cases {
		var rec lineRecorder
		ok := EmitTyped(&rec, "v", c.s, c.k)
		if ok != c.ok || len(rec.got) != 1 || rec.got[0] != c.want {
			t.Errorf("EmitTyped(%q, %d) = %v, %q; want %v, %q", c.s, c.k, ok, rec.got, c.ok, c.want)
		}
	}
}
