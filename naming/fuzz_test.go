package naming

import (
	"errors"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FuzzResolve parses any template as both kinds and resolves it against a
// record holding the fuzzed value (at a, b.c and items.0) and against
// arbitrary bytes: a parse error is an *Error inside the template, and
// every name is valid for its kind, the same on a second call, and never
// empty.
func FuzzResolve(f *testing.F) {
	seeds := []string{
		"logs", "$TAG", "logs_$TAG[1]", "$a", "$b['c']", `$b["c"]_$a`, "$items[0]", "$['a']_x",
		"system.$a", "sys$a.x", "$a['", "$TAG[", "x$1", "ü$a", "$a.$b.$TAG[9]",
	}
	for _, s := range seeds {
		f.Add(s, "kube.var.log", "Value.With/Dots$", []byte(nil))
	}
	f.Add("$a", "t", string(make([]byte, 300)), []byte{5, 0, 0, 0, 0})
	f.Add("$a['b']", "", "", []byte{0x20, 0, 0, 0, 3, 'a', 0, 0x10, 0, 0, 0})
	f.Fuzz(func(t *testing.T, src, tag, value string, raw []byte) {
		rec, err := bson.Marshal(bson.D{
			{Key: "a", Value: value},
			{Key: "b", Value: bson.D{{Key: "c", Value: value}}},
			{Key: "items", Value: bson.A{value}},
		})
		if err != nil {
			t.Skip("value does not encode:", err)
		}
		for _, k := range []Kind{Collection, Database} {
			tpl, err := parse(src, k)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Column < 0 || e.Column > len(src) || e.What == "" {
					t.Fatalf("parse(%q): bad error %#v", src, err)
				}
				continue
			}
			again, err := parse(tpl.String(), k)
			if err != nil || !reflect.DeepEqual(again.parts, tpl.parts) {
				t.Fatalf("%q does not parse again the same: %v", src, err)
			}
			for _, r := range []bson.Raw{rec, raw} {
				name, _ := tpl.Resolve(tag, r)
				checkName(t, name, k, MaxDatabaseBytes, 0)
				if second, _ := tpl.Resolve(tag, r); second != name {
					t.Fatalf("%q: %q then %q", src, name, second)
				}
			}
			checkName(t, tpl.Overflowed(tag, value), k, MaxDatabaseBytes, 0)
			db, coll, _ := Pair{Database: tpl, Collection: tpl}.Resolve(tag, rec)
			checkName(t, db, Database, 0, 0)
			checkName(t, coll, Collection, len(db), 0)
		}
	})
}
