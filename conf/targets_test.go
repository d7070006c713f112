package conf

import "testing"

// Templates are accepted, parsed into Targets, and their default dead
// letters derived with the suffix kept literal.
func TestTargets(t *testing.T) {
	for _, tt := range []struct {
		kv         []string
		dead       string // DeadLetterCollection
		templated  bool
		reserve    int // the collection template's Reserve
		missingVal string
	}{
		{[]string{"collection", "k8s_$kubernetes['namespace_name']"}, "k8s_$['kubernetes']['namespace_name']_dead", true, 0, "unknown"},
		{[]string{"database", "logs_$TAG[1]", "target_missing", "none"}, "logs_dead", true, 0, "none"},
		{[]string{"collection", "a_$TAG", "partition", "day"}, "a_$TAG_dead", true, len("_20260101"), "unknown"},
		{[]string{"database", "d_$ns", "collection", "k_$TAG", "dead_letter_collection", "dl_$['ns']"}, "dl_$['ns']", true, 0, "unknown"},
		{[]string{"collection", "logs"}, "logs_dead", false, 0, "unknown"},
		{[]string{"collection", "logs", "target_limit", "1000"}, "logs_dead", false, 0, "unknown"}, // a default set is no mistake
		{[]string{"dead_letter_collection", "dead_$TAG", "target_limit", "5"}, "dead_$TAG", true, 0, "unknown"},
	} {
		c, err := parse(with(tt.kv...))
		if err != nil {
			t.Errorf("%q: %v", tt.kv, err)
			continue
		}
		ts := c.Targets
		switch {
		case c.DeadLetterCollection != tt.dead:
			t.Errorf("%q: dead_letter_collection %q, want %q", tt.kv, c.DeadLetterCollection, tt.dead)
		case ts.Templated() != tt.templated:
			t.Errorf("%q: Templated() = %v", tt.kv, ts.Templated())
		case ts.Collection.Reserve != tt.reserve:
			t.Errorf("%q: Reserve %d, want %d", tt.kv, ts.Collection.Reserve, tt.reserve)
		case ts.Database.Missing != tt.missingVal || ts.Collection.Missing != tt.missingVal || ts.DeadLetter.Missing != tt.missingVal:
			t.Errorf("%q: Missing %q %q %q, want %q", tt.kv, ts.Database.Missing, ts.Collection.Missing, ts.DeadLetter.Missing, tt.missingVal)
		case ts.DeadLetter.String() != tt.dead:
			t.Errorf("%q: the dead-letter template is %q", tt.kv, ts.DeadLetter)
		}
	}
}
