package conf

import (
	"slices"
	"strings"
)

// Keys documents every key Parse reads, in a stable order, with its default
// as a user writes it. It is used to generate the README table.
func Keys() []KeyDoc { return slices.Clone(keyTable) }

// reservedExact and reservedPrefixes are the keys Fluent Bit keeps for itself
// on every output: a plugin key must not use them.
var (
	reservedExact    = []string{"name", "match", "match_regex", "alias", "host", "port", "tls", "retry_limit", "workers", "log_level"}
	reservedPrefixes = []string{"tls.", "storage.", "net."}
)

// Reserved reports whether Fluent Bit keeps key for itself.
func Reserved(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(reservedExact, k) {
		return true
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func lookupKey(key string) (KeyDoc, bool) {
	for _, d := range keyTable {
		if d.Key == key {
			return d, true
		}
	}
	return KeyDoc{}, false
}

// Map is a Getter over a map, for tests and tools. Keys are case-insensitive
// as in Fluent Bit: Set stores them lower-case, Get matches any case.
type Map map[string]string

// Get returns the value of key in any case, or "" when unset. When a map
// literal holds the same key in several cases, the lower-case one wins, then
// the first in sort order.
func (m Map) Get(key string) string {
	k := strings.ToLower(key)
	if v, ok := m[k]; ok {
		return v
	}
	var best string
	found := false
	for mk := range m {
		if strings.EqualFold(mk, k) && (!found || mk < best) {
			best, found = mk, true
		}
	}
	if found {
		return m[best]
	}
	return ""
}

// Set stores value under the lower-case key.
func (m Map) Set(key, value string) { m[strings.ToLower(key)] = value }

// Keys lists the keys set, lower-case and sorted. Parse uses it (through the
// Lister interface) to report unknown keys.
func (m Map) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, strings.ToLower(k))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Lister is implemented by Getters that can enumerate the keys they hold.
// Parse then reports keys it does not know (Fluent Bit's own keys excepted),
// so a misspelt key is not silently ignored. FLBPluginConfigKey cannot
// enumerate, so the cgo Getter does not implement it.
type Lister interface {
	Keys() []string
}

// suggest returns the known key closest to an unknown one, or "".
func suggest(unknown string) string {
	best, bestDist := "", 3
	if len(unknown) <= 4 {
		bestDist = 2
	}
	for _, d := range keyTable {
		if dist := editDistance(unknown, d.Key); dist < bestDist {
			best, bestDist = d.Key, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
