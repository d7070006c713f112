package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// doc encodes d as a BSON document.
func doc(t testing.TB, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t testing.TB, src string, k Kind) *Template {
	t.Helper()
	parse := Parse
	if k == Database {
		parse = ParseDatabase
	}
	tpl, err := parse(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return tpl
}

// checkName fails t unless name is a valid MongoDB name of kind k in a
// namespace with a dbLen-byte database and reserve bytes kept free.
func checkName(t testing.TB, name string, k Kind, dbLen, reserve int) {
	t.Helper()
	bad := ""
	switch {
	case name == "":
		bad = "empty"
	case !utf8.ValidString(name):
		bad = "not UTF-8"
	case k == Database && len(name) > MaxDatabaseBytes:
		bad = "longer than 63 bytes"
	case k == Database && strings.ContainsAny(name, databaseForbidden):
		bad = `holds one of / \ . space " $ NUL`
	case k == Collection && strings.ContainsAny(name, "$\x00"):
		bad = "holds $ or NUL"
	case k == Collection && (strings.HasPrefix(name, "system.") || name[0] == '.'):
		bad = "starts with system. or ."
	case k == Collection && len(name)+reserve > MaxCollectionBytes:
		bad = "longer than 200 bytes with its suffix"
	case k == Collection && dbLen+1+len(name)+reserve > MaxNamespaceBytes:
		bad = "namespace longer than MaxNamespaceBytes"
	}
	if bad != "" {
		t.Errorf("name %q (%d bytes, kind %d): %s", name, len(name), k, bad)
	}
}

func TestResolve(t *testing.T) {
	rec := doc(t, bson.D{
		{Key: "level", Value: "Error"},
		{Key: "app", Value: "web.front/v2"},
		{Key: "empty", Value: ""},
		{Key: "i32", Value: int32(-7)},
		{Key: "i64", Value: int64(1) << 40},
		{Key: "f", Value: 1.5},
		{Key: "tiny", Value: 1e-9},
		{Key: "huge", Value: 1e300},
		{Key: "whole", Value: 3.0},
		{Key: "nan", Value: math.NaN()},
		{Key: "inf", Value: math.Inf(-1)},
		{Key: "dec", Value: bson.NewDecimal128(0x3040000000000000, 12345)},
		{Key: "ok", Value: true},
		{Key: "no", Value: false},
		{Key: "null", Value: nil},
		{Key: "oid", Value: bson.ObjectID{1}},
		{Key: "when", Value: bson.DateTime(0)},
		{Key: "k8s", Value: bson.D{{Key: "namespace", Value: "prod"}, {Key: "labels", Value: bson.D{{Key: "app.io/name", Value: "api"}}}}},
		{Key: "items", Value: bson.A{"zero", bson.D{{Key: "name", Value: "one"}}}},
		{Key: "evil", Value: "$where../\x00\xff下"},
		{Key: "dup", Value: "first"},
		{Key: "dup", Value: "second"},
	})
	tests := []struct {
		src, tag, want string
		missing        bool
	}{
		{"logs", "a.b", "logs", false},
		{"$TAG", "kube.var.log", "kube_var_log", false},
		{"logs_$TAG[1]", "kube.var.log", "logs_var", false},
		{"$TAG[0]", "nodots", "nodots", false},
		{"$TAG[1]", "nodots", "unknown", true},
		{"x_$TAG[1]", "a..b", "x_unknown", true},
		{"x_$TAG[3]", "a.b.c", "x_unknown", true},
		{"$TAG", "", "unknown", true},
		{"$TAGS", "t", "tS", false},
		{"$level", "t", "Error", false},
		{"$app", "t", "web_front_v2", false},
		{"$app.logs", "t", "web_front_v2.logs", false},
		{"$empty", "t", "unknown", true},
		{"$nothere", "t", "unknown", true},
		{"n$i32", "t", "n-7", false},
		{"n$i64", "t", "n1099511627776", false},
		{"n$f", "t", "n1_5", false},
		{"n$tiny", "t", "n1e-09", false},
		{"n$huge", "t", "n1e_300", false},
		{"n$whole", "t", "n3", false},
		{"n$nan", "t", "nNaN", false},
		{"n$inf", "t", "n-Inf", false},
		{"n$dec", "t", "n12345", false},
		{"$ok.$no", "t", "true.false", false},
		{"$ok-$no", "t", "unknownfalse", true}, // '-' belongs to the name: the field "ok-"
		{"$null", "t", "unknown", true},
		{"$oid", "t", "unknown", true},
		{"$when", "t", "unknown", true},
		{"$k8s", "t", "unknown", true}, // a document is not a name
		{"$k8s['namespace']", "t", "prod", false},
		{`$k8s["labels"]['app.io/name']`, "t", "api", false},
		{"$k8s['labels']['none']", "t", "unknown", true},
		{"$level['sub']", "t", "unknown", true}, // a string has no keys
		{"$items[0]", "t", "zero", false},
		{"$items['1']['name']", "t", "one", false},
		{"$items[2]", "t", "unknown", true},
		{"$evil", "t", "_where________", false},
		{"$dup", "t", "first", false},
		{"$TAG.$level.$nothere", "a.b", "a_b.Error.unknown", true},
		{"sys$TAG.x", "tem", "_system.x", false},
		{"ü_$level", "t", "ü_Error", false},
	}
	for _, tc := range tests {
		tpl := mustParse(t, tc.src, Collection)
		got, missing := tpl.Resolve(tc.tag, rec)
		if got != tc.want || missing != tc.missing {
			t.Errorf("Resolve(%q, tag %q) = %q, %v; want %q, %v", tc.src, tc.tag, got, missing, tc.want, tc.missing)
		}
		checkName(t, got, Collection, MaxDatabaseBytes, 0)
	}
}

func TestResolveDatabase(t *testing.T) {
	rec := doc(t, bson.D{{Key: "App", Value: "Billing.API"}, {Key: "n", Value: 2.5}})
	tests := []struct {
		src, tag, want string
	}{
		{"Logs", "t", "Logs"}, // literal text is kept
		{"Logs_$App", "t", "Logs_billing_api"},
		{"$TAG[1]", "Kube.Prod", "prod"},
		{"$App-$n", "t", "unknown2_5"}, // the field "App-"
		{"$['App']-$n", "t", "billing_api-2_5"},
		{"$['App']_x", "t", "billing_api_x"},
		{"$none", "t", "unknown"},
	}
	for _, tc := range tests {
		tpl := mustParse(t, tc.src, Database)
		got, _ := tpl.Resolve(tc.tag, rec)
		if got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.src, got, tc.want)
		}
		checkName(t, got, Database, 0, 0)
	}
}

func TestMissingValue(t *testing.T) {
	tpl := mustParse(t, "logs_$app", Collection)
	tpl.Missing = "No App/Here"
	got, missing := tpl.Resolve("t", doc(t, bson.D{}))
	if got != "logs_No_App_Here" || !missing {
		t.Errorf("got %q, %v", got, missing)
	}
	db := mustParse(t, "$app", Database)
	db.Missing = "None"
	if got, _ := db.Resolve("t", nil); got != "none" {
		t.Errorf("database missing = %q, want none", got)
	}
}

// TestMalformedRecord: a record that is not a document, or is cut short,
// reads as holding no field.
func TestMalformedRecord(t *testing.T) {
	tpl := mustParse(t, "$a['b']", Collection)
	good := doc(t, bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: "v"}}}})
	if got, _ := tpl.Resolve("t", good); got != "v" {
		t.Fatalf("good record: %q", got)
	}
	for _, rec := range []bson.Raw{nil, {}, {1, 2, 3}, good[:len(good)-3], good[:9], {0xff, 0xff, 0xff, 0x7f, 0}} {
		if got, missing := tpl.Resolve("t", rec); got != "unknown" || !missing {
			t.Errorf("Resolve(%x) = %q, %v", []byte(rec), got, missing)
		}
	}
	// A string value whose length prefix runs past its element.
	bad := append(bson.Raw(nil), good...)
	i := strings.Index(string(bad), "b\x00") + 2
	bad[i] = 0x7f
	if got, _ := tpl.Resolve("t", bad); got != "unknown" {
		t.Errorf("bad string length: %q", got)
	}
}

// cutName is the rule Resolve documents for a name longer than limit.
func cutName(full string, limit int) string {
	sum := sha256.Sum256([]byte(full))
	keep := limit - 1 - HashDigits
	for keep > 0 && !utf8.RuneStart(full[keep]) {
		keep--
	}
	return full[:keep] + "_" + hex.EncodeToString(sum[:])[:HashDigits]
}

func TestLongNames(t *testing.T) {
	long := strings.Repeat("a", 10<<10)
	rec := doc(t, bson.D{{Key: "v", Value: long}, {Key: "w", Value: long + "b"}})
	coll := mustParse(t, "logs_$v", Collection)
	got, _ := coll.Resolve("t", rec)
	limit := MaxNamespaceBytes - 1 - MaxDatabaseBytes // 171
	if want := cutName("logs_"+long, limit); got != want || len(got) != limit {
		t.Errorf("collection: got %q (%d bytes), want %q", got, len(got), want)
	}
	other, _ := mustParse(t, "logs_$w", Collection).Resolve("t", rec)
	if other == got || other[:limit-17] != got[:limit-17] {
		t.Errorf("two long values: %q and %q", got, other)
	}
	again, _ := coll.Resolve("t", rec)
	if again != got {
		t.Errorf("not deterministic: %q then %q", got, again)
	}
	db, _ := mustParse(t, "$v", Database).Resolve("t", rec)
	if want := cutName(long, MaxDatabaseBytes); db != want || len(db) != 63 {
		t.Errorf("database: got %q, want %q", db, want)
	}
	checkName(t, got, Collection, MaxDatabaseBytes, 0)
	checkName(t, db, Database, 0, 0)
}

// TestCutKeepsUTF8: the cut never splits a character of literal text.
func TestCutKeepsUTF8(t *testing.T) {
	lit := "x" + strings.Repeat("é", 120) // 241 bytes; characters start at odd offsets
	got, _ := mustParse(t, lit+"$TAG", Collection).Resolve("t", nil)
	limit := MaxNamespaceBytes - 1 - MaxDatabaseBytes
	if !utf8.ValidString(got) || len(got) != limit-1 || got != cutName(lit+"t", limit) {
		t.Errorf("got %q (%d bytes)", got, len(got))
	}
}

// TestDistinctLongValues: long values differing only past the cut still
// get distinct names, and each name is the same every time.
func TestDistinctLongValues(t *testing.T) {
	tpl := mustParse(t, "$v", Collection)
	prefix := strings.Repeat("x", 300)
	seen := map[string]string{}
	for i := range 20000 {
		v := prefix + strconv.Itoa(i)
		name, _ := tpl.Resolve("t", doc(t, bson.D{{Key: "v", Value: v}}))
		if prev, dup := seen[name]; dup {
			t.Fatalf("%q and %q both give %q", prev, v, name)
		}
		seen[name] = v
	}
}

func TestLimits(t *testing.T) {
	long := strings.Repeat("c", 300)
	tests := []struct {
		dbLen, reserve, want int
	}{
		{4, 0, 200}, {4, 9, 191}, {34, 0, 200}, {35, 0, 199}, {54, 0, 180}, {63, 0, 171}, {63, 9, 162},
		{0, 0, 200}, {200, 0, 171}, {63, -5, 171}, {63, 1000, 171 - MaxReserve},
	}
	for _, tc := range tests {
		tpl := mustParse(t, long, Collection)
		tpl.Reserve = tc.reserve
		db := strings.Repeat("d", max(tc.dbLen, 1))
		_, got, _ := Pair{Database: mustParse(t, db, Database), Collection: tpl}.Resolve("t", nil)
		if tc.dbLen >= 1 && tc.dbLen <= 63 {
			if len(got) != tc.want {
				t.Errorf("db %d bytes, reserve %d: collection of %d bytes, want %d", tc.dbLen, tc.reserve, len(got), tc.want)
			}
		}
		if l := tpl.limit(Collection, tc.dbLen); l != tc.want {
			t.Errorf("limit(db %d, reserve %d) = %d, want %d", tc.dbLen, tc.reserve, l, tc.want)
		}
	}
	// A name exactly at its limit is kept whole.
	exact := strings.Repeat("e", 200)
	if _, got, _ := (Pair{mustParse(t, "db", Database), mustParse(t, exact, Collection)}).Resolve("t", nil); got != exact {
		t.Errorf("200-byte name changed to %q", got)
	}
}

func TestPair(t *testing.T) {
	rec := doc(t, bson.D{{Key: "team", Value: "Pay"}, {Key: "svc", Value: "api.v1"}})
	tg := Pair{Database: mustParse(t, "logs_$team", Database), Collection: mustParse(t, "$TAG[0].$svc.$env", Collection)}
	db, coll, missing := tg.Resolve("kube.x", rec)
	if db != "logs_pay" || coll != "kube.api_v1.unknown" || !missing {
		t.Errorf("Resolve = %q %q %v", db, coll, missing)
	}
	db, coll = tg.Overflowed("kube.x", "")
	if db != "logs_other" || coll != "kube.other.other" {
		t.Errorf("Overflowed = %q %q", db, coll)
	}
	db, coll = tg.Overflowed("kube.x", "Spill.Over")
	if db != "logs_spill_over" || coll != "kube.Spill_Over.Spill_Over" {
		t.Errorf("Overflowed(Spill.Over) = %q %q", db, coll)
	}
	// The collection's limit counts the database name the record gets.
	long := strings.Repeat("t", 80)
	tg = Pair{Database: mustParse(t, "$team", Database), Collection: mustParse(t, "$svc", Collection)}
	for _, team := range []string{"a", strings.Repeat("b", 63)} {
		db, coll, _ := tg.Resolve("t", doc(t, bson.D{{Key: "team", Value: team}, {Key: "svc", Value: strings.Repeat(long, 4)}}))
		checkName(t, db, Database, 0, 0)
		checkName(t, coll, Collection, len(db), 0)
		if want := min(MaxCollectionBytes, MaxNamespaceBytes-1-len(db)); len(coll) != want {
			t.Errorf("database of %d bytes: collection of %d bytes, want %d", len(db), len(coll), want)
		}
	}
}

// TestPairKinds: a Pair resolves each template as its slot's kind, so
// even a template parsed for the other kind gives valid names.
func TestPairKinds(t *testing.T) {
	tg := Pair{Database: mustParse(t, "a.b $TAG", Collection), Collection: mustParse(t, "system_x", Database)}
	db, coll, _ := tg.Resolve("Up", nil)
	if db != "a_b_up" || coll != "system_x" {
		t.Errorf("got %q %q", db, coll)
	}
}

func TestOverflowed(t *testing.T) {
	tpl := mustParse(t, "$TAG[1]_$app['name']_$TAG[5]", Collection)
	if got := tpl.Overflowed("k.web", ""); got != "web_other_unknown" {
		t.Errorf("Overflowed = %q", got)
	}
	if got := tpl.Overflowed("k.web", "../x"); got != "web____x_unknown" {
		t.Errorf("Overflowed(../x) = %q", got)
	}
	if got := mustParse(t, "static", Collection).Overflowed("t", ""); got != "static" {
		t.Errorf("static Overflowed = %q", got)
	}
}

// TestResolveBigValue resolves a 10 KB value of every byte, checked by
// the rules; BenchmarkResolveBigValue gives its cost.
func TestResolveBigValue(t *testing.T) {
	var b strings.Builder
	for b.Len() < 10<<10 {
		for c := range 256 {
			b.WriteByte(byte(c))
		}
	}
	rec := doc(t, bson.D{{Key: "v", Value: b.String()}})
	for _, k := range []Kind{Collection, Database} {
		got, missing := mustParse(t, "$v", k).Resolve("t", rec)
		checkName(t, got, k, MaxDatabaseBytes, 0)
		if missing || len(got) != mustParse(t, "$v", k).limit(k, MaxDatabaseBytes) {
			t.Errorf("kind %d: %q (%d bytes), missing %v", k, got, len(got), missing)
		}
	}
}

// TestCutAtEveryLength compares Resolve with the documented rule, written
// plainly on the whole name, for names around every limit and around the
// bytes Resolve keeps before it only hashes the rest.
func TestCutAtEveryLength(t *testing.T) {
	for _, k := range []Kind{Collection, Database} {
		for _, src := range []string{"$v", "sys$TAG.$v", "é$v", "$TAG$v"} {
			if k == Database && strings.Contains(src, ".") {
				continue
			}
			tpl := mustParse(t, src, k)
			limit := tpl.limit(k, MaxDatabaseBytes)
			for n := 1; n < 2*headBytes+3; n++ {
				value := "x." + strings.Repeat("Ab", n)[:n]
				got, _ := tpl.Resolve("tem", doc(t, bson.D{{Key: "v", Value: value}}))
				safe := strings.ReplaceAll(value, ".", "_")
				if k == Database {
					safe = strings.ToLower(safe)
				}
				full := strings.NewReplacer("$TAG", "tem", "$v", safe).Replace(src)
				if k == Collection && strings.HasPrefix(full, "system.") {
					full = "_" + full
				}
				want := full
				if len(full) > limit {
					want = cutName(full, limit)
				}
				if got != want {
					t.Fatalf("kind %d, %q, value of %d bytes: got %q, want %q", k, src, len(value), got, want)
				}
			}
		}
	}
}

// Records with equal keys resolve to equal names; records whose names
// differ have different keys.
func TestAppendKey(t *testing.T) {
	tg := Pair{Database: mustParse(t, "db_$TAG", Database), Collection: mustParse(t, "k_$['ns']_$a['b']", Collection)}
	recs := []bson.Raw{
		doc(t, bson.D{{Key: "ns", Value: "x"}}),
		doc(t, bson.D{{Key: "ns", Value: "x"}, {Key: "other", Value: 1}}),
		doc(t, bson.D{{Key: "ns", Value: "y"}}),
		doc(t, bson.D{{Key: "ns", Value: "x"}, {Key: "a", Value: bson.D{{Key: "b", Value: "z"}}}}),
		doc(t, bson.D{{Key: "ns", Value: int32(1)}}),
		doc(t, bson.D{{Key: "ns", Value: "1"}}),
		doc(t, bson.D{}),
	}
	byKey := map[string]string{}
	for _, r := range recs {
		_, coll, _ := tg.Resolve("t", r)
		k := string(tg.AppendKey(nil, r))
		if prev, ok := byKey[k]; ok && prev != coll {
			t.Errorf("key %q gives %q and %q", k, prev, coll)
		}
		byKey[k] = coll
	}
	if len(byKey) != 6 {
		t.Errorf("%d distinct keys, want 6 (the first two records share one)", len(byKey))
	}
	if n := testing.AllocsPerRun(100, func() { _ = tg.AppendKey(make([]byte, 0, 64), recs[3]) }); n > 1 {
		t.Errorf("AppendKey allocates %v times", n)
	}
}
