package model

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// cleanName reports whether key needs no rewriting: it is not empty, does
// not start with "$" and holds no "." or NUL and only valid UTF-8. One pass
// for the usual short ASCII name.
func cleanName(key []byte) bool {
	if len(key) == 0 || key[0] == '$' {
		return false
	}
	for i, c := range key {
		switch {
		case c == '.' || c == 0:
			return false
		case c >= utf8.RuneSelf:
			return utf8.Valid(key[i:]) && !slices.ContainsFunc(key[i:], func(c byte) bool { return c == '.' || c == 0 })
		}
	}
	return true
}

// AppendName appends key made safe as a MongoDB field name: "." becomes
// dot, a leading "$" becomes dollar, NUL becomes "_", invalid UTF-8 becomes
// U+FFFD and an empty name becomes "_empty". The rules hold for the
// rewritten name too: with empty replacements "$" or "." would become "",
// and "..$x" would start with "$". An empty dollar strips every leading
// "$"; one that starts with "$" counts as "_". It is the one escaping of field
// names: record fields, bucket keys and counted values all go through it.
func AppendName(dst, key []byte, dot, dollar string) []byte {
	if cleanName(key) {
		return append(dst, key...)
	}
	start := len(dst)
	s := string(key)
	if !utf8.Valid(key) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.':
			dst = append(dst, dot...)
		case 0:
			dst = append(dst, '_')
		default:
			dst = append(dst, s[i])
		}
	}
	if strings.HasPrefix(dollar, "$") {
		dollar = "_" // not a replacement: it would loop
	}
	for len(dst) > start && dst[start] == '$' {
		dst = slices.Delete(dst, start, start+1)
		dst = slices.Insert(dst, start, []byte(dollar)...)
	}
	if len(dst) == start {
		dst = append(dst, "_empty"...)
	}
	return dst
}

// SafeName is AppendName for a string.
func SafeName(key, dot, dollar string) string {
	if cleanName([]byte(key)) {
		return key
	}
	return string(AppendName(nil, []byte(key), dot, dollar))
}

// Path is a configured dotted path (a bucket_key, stats or count_by field)
// as it is stored: the nested fields it names, each segment made safe as a
// field name is (SafeName), so kubernetes.pod_name stays
// kubernetes.pod_name. The configuration refuses paths whose segments
// would change (empty, or starting with "$").
func Path(p, dot, dollar string) string {
	for rest := p; ; {
		seg, tail, more := strings.Cut(rest, ".")
		if !cleanName([]byte(seg)) {
			break
		}
		if !more {
			return p // the usual path: no allocation
		}
		rest = tail
	}
	segs := strings.Split(p, ".")
	for i, s := range segs {
		segs[i] = SafeName(s, dot, dollar)
	}
	return strings.Join(segs, ".")
}
