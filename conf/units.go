package conf

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Unit parsing. Each parser returns the value and, when the text is not valid,
// a reason phrased for the user (the caller adds the key and the value).

const day = 24 * time.Hour

const durationSyntax = "a duration is a number with a unit ms, s, m, h or d (e.g. 500ms, 30s, 1m, 1h, 7d; 1h30m also works); a plain integer means seconds"

// ParseDuration parses a duration as the plugin's keys take it (see
// parseDuration), for tools that take durations the same way.
func ParseDuration(s string) (time.Duration, error) {
	d, why := parseDuration(s)
	if why != "" {
		return 0, fmt.Errorf("duration %q: %s", s, why)
	}
	return d, nil
}

// parseDuration parses 500ms, 30s, 1m, 1h, 7d, compounds such as 1h30m, and a
// plain non-negative integer meaning seconds. Units are lower case only, so
// that 1M (month? minute?) is never guessed.
func parseDuration(s string) (time.Duration, string) {
	if s == "" {
		return 0, "empty; " + durationSyntax
	}
	if isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > math.MaxInt64/int64(time.Second) {
			return 0, "too large"
		}
		return time.Duration(n) * time.Second, ""
	}
	var total time.Duration
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		num := rest[:i]
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		unit := rest[i:j]
		rest = rest[j:]
		if num == "" || unit == "" {
			return 0, durationSyntax
		}
		var d time.Duration
		switch unit {
		case "ms", "s", "m", "h":
			v, err := time.ParseDuration(num + unit)
			if err != nil {
				return 0, durationSyntax
			}
			d = v
		case "d":
			v, err := time.ParseDuration(num + "h")
			if err != nil {
				return 0, durationSyntax
			}
			if v > math.MaxInt64/24 {
				return 0, "too large"
			}
			d = v * 24
		default:
			return 0, "unknown unit " + strconv.Quote(unit) + "; " + durationSyntax
		}
		if total > math.MaxInt64-d {
			return 0, "too large"
		}
		total += d
	}
	return total, ""
}

// formatDuration renders d the way a user would write it (the inverse of
// parseDuration for the values it produces).
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

const sizeSyntax = "a size is a number of bytes with an optional unit K, M or G (also KB/KiB, MB/MiB, GB/GiB; K = 1024), e.g. 512, 512K, 1.5M, 1G"

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"K": kib, "KB": kib, "KIB": kib,
	"M": mib, "MB": mib, "MIB": mib,
	"G": gib, "GB": gib, "GIB": gib,
}

// parseSize parses 512, 512K, 1M, 1.5M, 1G, 4KB, 1MiB (case-insensitive
// units, powers of 1024). The result must be a whole number of bytes.
func parseSize(s string) (int64, string) {
	i := 0
	dots := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		if s[i] == '.' {
			dots++
		}
		i++
	}
	num, unit := s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, "unknown unit " + strconv.Quote(s[i:]) + "; " + sizeSyntax
	}
	if num == "" || dots > 1 || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, sizeSyntax
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, sizeSyntax
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, "not a whole number of bytes"
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, "too large"
	}
	return n.Int64(), ""
}

// formatSize renders n with the largest exact unit.
func formatSize(n int64) string {
	switch {
	case n == 0:
		return "0"
	case n%gib == 0:
		return strconv.FormatInt(n/gib, 10) + "G"
	case n%mib == 0:
		return strconv.FormatInt(n/mib, 10) + "M"
	case n%kib == 0:
		return strconv.FormatInt(n/kib, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

const boolSyntax = "use on/off, true/false, yes/no or 1/0"

// parseBool accepts on/off, true/false, yes/no, 1/0 in any case.
func parseBool(s string) (bool, string) {
	switch strings.ToLower(s) {
	case "on", "true", "yes", "1":
		return true, ""
	case "off", "false", "no", "0":
		return false, ""
	}
	return false, boolSyntax
}

func formatBool(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// parseInt parses a plain decimal integer (digits only, no sign).
func parseInt(s string) (int64, string) {
	if !isDigits(s) {
		return 0, "not a whole number"
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, "too large"
	}
	return n, ""
}

// parseList splits a comma-separated list, trimming whitespace around items.
// Empty items and duplicates are rejected.
func parseList(s string) ([]string, string) {
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, "empty item in the comma-separated list"
		}
		if seen[p] {
			return nil, strconv.Quote(p) + " is listed twice"
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
