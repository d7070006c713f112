package naming

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		src  string
		kind Kind
		name string
		want bool
	}{
		{"logs", Collection, "logs", true},
		{"logs", Collection, "logs2", false},
		{"k8s_$ns", Collection, "k8s_default", true},
		{"k8s_$ns", Collection, "k8s_", false},
		{"k8s_$ns", Collection, "k8s", false},
		{"k8s_$ns", Collection, "k8s_a.b", false},
		{"k8s_$ns", Collection, "k8s_kube-system", true},
		{"$TAG[0]_$TAG[1]_x", Collection, "a_b_c_x", true},
		{"$TAG[0]_$TAG[1]_x", Collection, "a__x", false},
		{"$TAG.logs", Collection, "_system.logs", true},
		{"$TAG.logs", Collection, "app.logs", true},
		{"logs_$TAG", Database, "logs_app", true},
		{"logs_$TAG", Database, "logs_App", false},
		{"logs_$TAG", Database, "logs_", false},
		{"$a", Collection, "café", false},
		{"$TAG", Database, "admin", false},
		{"$db", Database, "local", false},
		{"con$db", Database, "config", false},
		{"$TAG", Database, "admins", true},
		{"$TAG", Database, "local2", true},
		{"$TAG", Collection, "admin", true},
	} {
		tm := mustParse(t, c.src, c.kind)
		if got := tm.Matches(c.name); got != c.want {
			t.Errorf("%q.Matches(%q) = %v, want %v", c.src, c.name, got, c.want)
		}
	}
}

// MongoDB's own databases are reserved in any case; other names that
// hold their text are not.
func TestReserved(t *testing.T) {
	for name, want := range map[string]bool{"admin": true, "local": true, "config": true, "ADMIN": true, "Local": true,
		"admins": false, "_admin": false, "configs": false, "logs": false, "": false} {
		if got := Reserved(name); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestMatchesWhatResolves: every name a template resolves to, cut or not,
// matches it; names of other templates do not.
func TestMatchesWhatResolves(t *testing.T) {
	long := strings.Repeat("v", 300)
	for _, src := range []string{"k8s_$ns", "$ns_logs", "$['ns']_logs", "a_$ns_$TAG[1]_z", "$TAG.$ns", "x_$ns"} {
		for _, kind := range []Kind{Collection, Database} {
			tm, err := parse(src, kind)
			if err != nil {
				continue
			}
			for _, v := range []any{"default", "Kube.System", long, "$where", "", int64(7), "../x", "a\x00b"} {
				rec := doc(t, bson.D{{Key: "ns", Value: v}})
				for _, tag := range []string{"kube.app", "system", strings.Repeat("t.", 100)} {
					name, _ := tm.Resolve(tag, rec)
					if !tm.Matches(name) {
						t.Errorf("%q (%v) resolves %v, tag %q to %q, which it does not match", src, kind, v, tag, name)
					}
				}
			}
		}
	}
	other := mustParse(t, "k8s_$ns", Collection)
	for _, name := range []string{"logs", "k8s", "app_k8s_x", "k8s_a.b_0123456789abcdef", "k8s_a.b"} {
		if other.Matches(name) {
			t.Errorf("k8s_$ns matches %q", name)
		}
	}
}

// An overflow target is a name whose record placeholders read the
// overflow value, tag placeholders any value; OverflowedAll reads the tag
// placeholders as the overflow value too, and its target matches as well.
func TestMatchesOverflow(t *testing.T) {
	tg := Pair{Database: mustParse(t, "k8s_$TAG[1]", Database), Collection: mustParse(t, "logs_$['ns']_$TAG", Collection)}
	for _, c := range []struct {
		db, coll string
		want     bool
	}{
		{"k8s_prod", "logs_other_kube_prod", true},
		{"k8s_prod", "logs_a_kube_prod", false},
		{"k8s_other", "logs_other_other", true},
		{"k8s_", "logs_other_kube_prod", false},
		{"prod", "logs_other_kube_prod", false},
	} {
		if got := tg.MatchesOverflow(c.db, c.coll, ""); got != c.want {
			t.Errorf("%s.%s: %v, want %v", c.db, c.coll, got, c.want)
		}
	}
	if db, coll := tg.OverflowedAll("Spill"); db != "k8s_spill" || coll != "logs_Spill_Spill" || !tg.MatchesOverflow(db, coll, "Spill") {
		t.Errorf("OverflowedAll: %s.%s", db, coll)
	}
	if db, coll := tg.Overflowed("kube.prod", ""); !tg.MatchesOverflow(db, coll, "") {
		t.Errorf("Overflowed's %s.%s does not match", db, coll)
	}
}
