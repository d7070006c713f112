package naming

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestParse(t *testing.T) {
	tests := []struct {
		src     string
		static  bool
		tagOnly bool
		fields  [][]string
	}{
		{"logs", true, true, nil},
		{"app logs (prod) ü", true, true, nil},
		{"$TAG", false, true, nil},
		{"logs_$TAG[1]", false, true, nil},
		{"$TAG[0].$TAG[12]", false, true, nil},
		{"$TAGS", false, true, nil}, // the tag, then "S", as Fluent Bit reads it
		{"$tag", false, false, [][]string{{"tag"}}},
		{"$level", false, false, [][]string{{"level"}}},
		{"x_$remote-ip", false, false, [][]string{{"remote-ip"}}},
		{"$_a1", false, false, [][]string{{"_a1"}}},
		{"$app.logs", false, false, [][]string{{"app"}}},
		{"$a/$b", false, false, [][]string{{"a"}, {"b"}}},
		{"$a['b']['c']", false, false, [][]string{{"a", "b", "c"}}},
		{`$a["b.c"]['d e']`, false, false, [][]string{{"a", "b.c", "d e"}}},
		{`$a['it''s']["say ""hi"""]`, false, false, [][]string{{"a", "it's", `say "hi"`}}},
		{`$a['"']["'"]`, false, false, [][]string{{"a", `"`, "'"}}},
		{"$items[0]['name']", false, false, [][]string{{"items", "0", "name"}}},
		{"$a_$a_$TAG", false, false, [][]string{{"a_"}}}, // '_' belongs to the name
		{"$a.$b.$a", false, false, [][]string{{"a"}, {"b"}}},
		{"$k['x']]", false, false, [][]string{{"k", "x"}}}, // a lone ] is literal
		{"$['app']_logs", false, false, [][]string{{"app"}}},
		{`$["a.b"]['c']-$['d']`, false, false, [][]string{{"a.b", "c"}, {"d"}}},
	}
	for _, tc := range tests {
		tpl, err := Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if tpl.Static() != tc.static || tpl.TagOnly() != tc.tagOnly {
			t.Errorf("Parse(%q): Static %v TagOnly %v, want %v %v", tc.src, tpl.Static(), tpl.TagOnly(), tc.static, tc.tagOnly)
		}
		if got := tpl.Fields(); !reflect.DeepEqual(got, tc.fields) {
			t.Errorf("Parse(%q).Fields() = %q, want %q", tc.src, got, tc.fields)
		}
		if tpl.String() != tc.src || tpl.Kind() != Collection {
			t.Errorf("Parse(%q): String %q Kind %v", tc.src, tpl.String(), tpl.Kind())
		}
	}
}

// TestParseParts checks how a template is split, through the literal text
// and tag parts a resolution shows.
func TestParseParts(t *testing.T) {
	tpl, err := Parse("a-$TAG[2]-$TAG-b")
	if err != nil {
		t.Fatal(err)
	}
	want := []part{
		{kind: literal, text: "a-"}, {kind: tagPart, index: 2}, {kind: literal, text: "-"},
		{kind: wholeTag}, {kind: literal, text: "-b"},
	}
	if !reflect.DeepEqual(tpl.parts, want) {
		t.Errorf("parts = %+v, want %+v", tpl.parts, want)
	}
}

func TestFieldsAreCopies(t *testing.T) {
	tpl, err := Parse("$a['b']")
	if err != nil {
		t.Fatal(err)
	}
	tpl.Fields()[0][1] = "changed"
	if got := tpl.Fields()[0][1]; got != "b" {
		t.Errorf("Fields shares the template's paths: %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"", "empty template: a MongoDB name cannot be empty"},
		{"logs$", "$ without TAG or a field name at column 5: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $"},
		{"a$-b", "$ without TAG or a field name at column 2: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $"},
		{"$$TAG", "$ without TAG or a field name at column 1: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $"},
		{"x$1", "$1 at column 2: regex captures ($0 to $9) are not supported; use $TAG, $TAG[N] or $field"},
		{"${HOME}", "$ without TAG or a field name at column 1: a field name starts with a letter or _ (or is quoted: $['key']); a name cannot contain a literal $"},
		{"logs_$a['b'", "unclosed [ at column 8"},
		{"logs_$a[", "unclosed [ at column 8"},
		{"$a['b", "unclosed quote at column 4"},
		{"$[", "unclosed [ at column 2"},
		{"$['a'", "unclosed [ at column 2"},
		{"$[x]", `expected a quoted key or an index after [ at column 3: write $name['key'], $name["key"] or $name[0]`},
		{`$a["b']`, "unclosed quote at column 4"},
		{"$a[b]", `expected a quoted key or an index after [ at column 4: write $name['key'], $name["key"] or $name[0]`},
		{"$a[ 'b']", `expected a quoted key or an index after [ at column 4: write $name['key'], $name["key"] or $name[0]`},
		{"$a['b' ]", "expected ] after the key at column 7"},
		{"$a[1x]", "expected ] after the key at column 5"},
		{"$a['']", "empty key at column 4"},
		{"$a['b\x00']", "NUL in a key at column 6: a field name cannot contain NUL"},
		{"$TAG[", "unclosed [ at column 5"},
		{"$TAG[1", "unclosed [ at column 5"},
		{"$TAG[]", `tag part "" at column 6: $TAG[N] takes a number N from 0 to 999`},
		{"$TAG[x]", `tag part "x" at column 6: $TAG[N] takes a number N from 0 to 999`},
		{"$TAG[-1]", `tag part "-1" at column 6: $TAG[N] takes a number N from 0 to 999`},
		{"$TAG[+1]", `tag part "+1" at column 6: $TAG[N] takes a number N from 0 to 999`},
		{"$TAG[1000]", `tag part "1000" at column 6: $TAG[N] takes a number N from 0 to 999`},
		{"ab\x00c", "NUL at column 3: a MongoDB name cannot contain NUL"},
		{"ab\xffc", "invalid UTF-8 at column 3: a MongoDB name is UTF-8"},
		{"$a\xe2\x82", "invalid UTF-8 at column 3: a MongoDB name is UTF-8"},
		{"system.$TAG", `"system." at column 1: a collection name cannot start with system. (reserved by MongoDB)`},
		{".logs", `"." at column 1: a collection name cannot start with .`},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %s", tc.src, err, tc.want)
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Errorf("Parse(%q): %T is not *Error", tc.src, err)
		}
	}
}

func TestParseDatabase(t *testing.T) {
	for _, src := range []string{"fluentbit", "logs_$TAG[0]", "$k8s['namespace']", "system", "$a"} {
		tpl, err := ParseDatabase(src)
		if err != nil || tpl.Kind() != Database {
			t.Errorf("ParseDatabase(%q) = %v, %v", src, tpl, err)
		}
	}
	why := `a database name cannot contain / \ . space " $ or NUL`
	for src, col := range map[string]int{"a.b": 2, "logs/$TAG": 5, `a\b`: 2, "a b": 2, `x"`: 2, "$app.logs": 5} {
		_, err := ParseDatabase(src)
		if err == nil || !strings.HasSuffix(err.Error(), why) || err.(*Error).Column != col {
			t.Errorf("ParseDatabase(%q) = %v, want column %d and %q", src, err, col, why)
		}
	}
	// A collection's own rules do not apply to a database.
	if _, err := ParseDatabase("system_x"); err != nil {
		t.Errorf("ParseDatabase(system_x): %v", err)
	}
}

// Suffixed keeps the suffix literal and the names the same.
func TestSuffixed(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"k_$ns", "k_$['ns']_dead"},
		{"$TAG[1]_$a['b c']", "$TAG[1]_$['a']['b c']_dead"},
		{"$a['it''s']", "$['a']['it''s']_dead"},
		{"logs", "logs_dead"},
		{"$TAG", "$TAG_dead"},
	} {
		tm := mustParse(t, c.src, Collection)
		got := tm.Suffixed("_dead")
		if got != c.want {
			t.Errorf("%q.Suffixed = %q, want %q", c.src, got, c.want)
			continue
		}
		again := mustParse(t, got, Collection)
		rec := doc(t, bson.D{{Key: "ns", Value: "x"}, {Key: "a", Value: bson.D{{Key: "b c", Value: "y"}, {Key: "it's", Value: "z"}}}})
		n1, _ := tm.Resolve("t.u", rec)
		n2, _ := again.Resolve("t.u", rec)
		if n2 != n1+"_dead" {
			t.Errorf("%q gives %q, %q gives %q", c.src, n1, got, n2)
		}
	}
}
