package parser

import (
	"fmt"
	"strings"
	"time"
)

// TimeFormat reads the time field of a JSON or logfmt line: by default
// (the zero format) what parseLineTime reads, ISO 8601 and RFC 3339 among
// it, and, for numbers, seconds since 1970; or a strptime-style format as
// Fluent Bit's parsers write them ("%d/%b/%Y:%H:%M:%S %z").
type TimeFormat struct {
	text  string
	items []timeItem
}

// timeItem is one step of a compiled format: a directive letter, a run of
// whitespace (' ') or literal text (0).
type timeItem struct {
	verb byte
	lit  string
}

// TimeDirectives lists the directives a time format may use, for messages.
const TimeDirectives = "%Y %y %m %b %B %d %e %j %H %M %S %L (fraction of a second) %z %Z %a %A %s %T (%H:%M:%S) %F (%Y-%m-%d) %%, and literal text"

// ParseTimeFormat compiles a strptime-style format; "" is the default
// format. A space in the format matches any run of spaces and tabs, even an
// empty one; other text must match as written. A format must give a date:
// %s, %F, or a year (%Y, %y) with a month (%m, %b) and a day (%d, %e), or
// with a day of the year (%j). Without %z or %Z the time is UTC.
func ParseTimeFormat(format string) (*TimeFormat, error) {
	f := &TimeFormat{text: format}
	if format == "" {
		return f, nil
	}
	var seen [128]bool
	lit := 0 // start of the pending literal text
	flush := func(end int) {
		if end > lit {
			f.items = append(f.items, timeItem{lit: format[lit:end]})
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == ' ' || c == '\t':
			flush(i)
			for i+1 < len(format) && (format[i+1] == ' ' || format[i+1] == '\t') {
				i++
			}
			f.items = append(f.items, timeItem{verb: ' '})
			lit = i + 1
		case c == '%':
			flush(i)
			if i+1 == len(format) {
				return nil, fmt.Errorf("ends with a lone %%; directives allowed: %s", TimeDirectives)
			}
			v := format[i+1]
			i++
			lit = i + 1
			switch v {
			case '%':
				f.items = append(f.items, timeItem{lit: "%"})
			case 'T':
				f.items = append(f.items, timeItem{verb: 'H'}, timeItem{lit: ":"}, timeItem{verb: 'M'}, timeItem{lit: ":"}, timeItem{verb: 'S'})
				seen['H'], seen['M'], seen['S'] = true, true, true
			case 'F':
				f.items = append(f.items, timeItem{verb: 'Y'}, timeItem{lit: "-"}, timeItem{verb: 'm'}, timeItem{lit: "-"}, timeItem{verb: 'd'})
				seen['Y'], seen['m'], seen['d'] = true, true, true
			case 'Y', 'y', 'm', 'b', 'B', 'd', 'e', 'j', 'H', 'M', 'S', 'L', 'z', 'Z', 'a', 'A', 's':
				if v == 'B' {
					v = 'b'
				}
				if v == 'A' {
					v = 'a'
				}
				f.items = append(f.items, timeItem{verb: v})
				seen[v] = true
			default:
				return nil, fmt.Errorf("unknown directive %%%c; allowed: %s", v, TimeDirectives)
			}
		}
	}
	flush(len(format))
	year := seen['Y'] || seen['y']
	dayOf := (seen['m'] || seen['b']) && (seen['d'] || seen['e'])
	if !seen['s'] && !(year && (dayOf || seen['j'])) {
		return nil, fmt.Errorf("gives no date: use %%s, or a year (%%Y or %%y) with %%m or %%b and %%d or %%e, or with %%j")
	}
	return f, nil
}

// String is the format as written; "" is the default.
func (f *TimeFormat) String() string {
	if f == nil {
		return ""
	}
	return f.text
}

// IsDefault reports whether f is the default format.
func (f *TimeFormat) IsDefault() bool { return f == nil || f.items == nil }

// Parse reads s as a time in UTC without allocating. A time outside years
// 1 to 9999 (year 0, or a zone moving year 1 or 9999 past its end) is not
// a time. The fields are locals, not a struct, so that they stay in
// registers: Parse runs for every line that has a time format.
func (f *TimeFormat) Parse(s string) (time.Time, bool) {
	if f.IsDefault() {
		t, ok := parseLineTime(s)
		return t, ok && InRange(t)
	}
	var (
		year, month, day, yday  = -1, -1, -1, -1
		hour, minute, sec, nsec int
		offset                  int
		epoch                   int64
		hasEpoch, ok            bool
	)
	for _, it := range f.items {
		switch it.verb {
		case 0:
			if !strings.HasPrefix(s, it.lit) {
				return time.Time{}, false
			}
			s = s[len(it.lit):]
			continue
		case ' ':
			s = strings.TrimLeft(s, " \t")
			continue
		case 'Y':
			year, s, ok = scanNum(s, 4, 0, 9999)
		case 'y':
			year, s, ok = scanYear2(s)
		case 'm':
			month, s, ok = scanNum(s, 2, 1, 12)
		case 'b':
			month, s, ok = scanName(s, monthNames)
		case 'a':
			_, s, ok = scanName(s, weekdayNames)
		case 'e':
			day, s, ok = scanNum(strings.TrimPrefix(s, " "), 2, 1, 31)
		case 'd':
			day, s, ok = scanNum(s, 2, 1, 31)
		case 'j':
			yday, s, ok = scanNum(s, 3, 1, 366)
		case 'H':
			hour, s, ok = scanNum(s, 2, 0, 23)
		case 'M':
			minute, s, ok = scanNum(s, 2, 0, 59)
		case 'S':
			sec, s, ok = scanNum(s, 2, 0, 59)
		case 'L':
			if ok = s != "" && isDigit(s[0]); ok {
				nsec, s = scanFraction(s)
			}
		case 'z':
			offset, s, ok = scanOffset(s)
		case 'Z':
			if s, ok = scanUTCName(s); ok {
				offset = 0
			}
		case 's':
			epoch, s, ok = scanEpoch(s)
			hasEpoch = ok
		}
		if !ok {
			return time.Time{}, false
		}
	}
	switch {
	case s != "":
		return time.Time{}, false
	case hasEpoch:
		t := time.Unix(epoch, int64(nsec)).UTC()
		return t, InRange(t)
	}
	return dateTime(year, month, day, yday, hour, minute, sec, nsec, offset)
}

// dateTime is the time of a date and a clock read by a format; month and
// day are -1 when the format gives the day of the year (%j), which is
// checked against the year's length.
func dateTime(year, month, day, yday, hour, minute, sec, nsec, offset int) (time.Time, bool) {
	if month < 0 || day < 0 {
		jan1 := time.Date(year, time.January, 1, 0, 0, 0, 0, time.UTC)
		t := jan1.AddDate(0, 0, yday-1)
		if t.Year() != year {
			return time.Time{}, false
		}
		month, day = int(t.Month()), t.Day()
	}
	t, ok := civilTime(year, time.Month(month), day, hour, minute, sec, nsec, offset)
	return t, ok && InRange(t)
}

// scanYear2 reads a two-digit year: 69-99 are 1969-1999, 00-68 2000-2068.
func scanYear2(s string) (int, string, bool) {
	n, s, ok := scanNum(s, 2, 0, 99)
	if !ok {
		return 0, s, false
	}
	if n < 69 {
		return 2000 + n, s, true
	}
	return 1900 + n, s, true
}

// scanUTCName reads UTC, GMT or Z.
func scanUTCName(s string) (string, bool) {
	for _, name := range [...]string{"UTC", "GMT", "Z"} {
		if strings.HasPrefix(s, name) {
			return s[len(name):], true
		}
	}
	return s, false
}

// scanEpoch reads seconds since 1970, with an optional minus sign.
func scanEpoch(s string) (int64, string, bool) {
	neg := s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	n, s, ok := scanNum(s, 12, 0, int(MaxTime.Unix()))
	if !ok {
		return 0, s, false
	}
	if neg {
		return -int64(n), s, true
	}
	return int64(n), s, true
}

// scanNum reads up to width digits (at least one) as a number in [lo, hi].
func scanNum(s string, width, lo, hi int) (int, string, bool) {
	n, i := 0, 0
	for ; i < width && i < len(s) && isDigit(s[i]); i++ {
		n = n*10 + int(s[i]-'0')
	}
	if i == 0 || n < lo || n > hi {
		return 0, s, false
	}
	return n, s[i:], true
}

var (
	monthNames = []string{"January", "February", "March", "April", "May", "June",
		"July", "August", "September", "October", "November", "December"}
	weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// scanName reads one of names, in full or by its first three letters, in
// any case, and returns its number counted from 1.
func scanName(s string, names []string) (int, string, bool) {
	for i, name := range names {
		if len(s) >= len(name) && strings.EqualFold(s[:len(name)], name) {
			return i + 1, s[len(name):], true
		}
		if len(s) >= 3 && strings.EqualFold(s[:3], name[:3]) {
			return i + 1, s[3:], true
		}
	}
	return 0, s, false
}
