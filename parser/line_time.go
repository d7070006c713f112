package parser

import (
	"math"
	"time"
)

// namedTimeLayouts are tried for a time that starts with a name: the Apache
// error log's time, and the same without its weekday as Fluent Bit's stock
// apache_error parser leaves it. time.Parse also accepts fractional seconds
// right after the seconds of each of them.
var namedTimeLayouts = []string{"Mon Jan _2 15:04:05 2006", "Jan _2 15:04:05 2006"}

// parseLineTime parses a time written in a log line: Common Log Format
// ("10/Oct/2000:13:55:36 -0700"), ISO 8601 (see parseISOTime: RFC 3339 and
// "2006-01-02 15:04:05", with or without fractional seconds and zone), the
// Apache error log's "Wed Oct 11 14:32:52.123456 2000", or seconds since
// 1970 ("1717236000", "1717236000.25"). A time without an offset is taken as
// UTC; the result is always in UTC.
func parseLineTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' {
		if t, ok := parseCLFTime(s); ok {
			return t, true
		}
		if t, ok := parseISOTime(s); ok {
			return t, true
		}
		return parseEpochText(s)
	}
	for _, layout := range namedTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// parseISOTime parses an ISO 8601 date and time in its extended form
// without allocating:
//
//	2024-06-01                       midnight UTC
//	2024-06-01T10:00  2024-06-01 10:00:00  2024-06-01t10:00:00
//	2024-06-01T10:00:00.123456789    fraction after "." or ","
//	...Z  ...+02:00  ...+0200  ...+02  an optional space before the offset
//	2024-06-01 10:00:00 +0000 UTC    a zone name after an offset is ignored
//	2024-06-01 10:00:00 UTC          UTC or GMT alone mean UTC
//
// A time without a zone is UTC; the result is in UTC.
func parseISOTime(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	year, ok1 := atoiFixed(s[0:4])
	month, ok2 := atoiFixed(s[5:7])
	day, ok3 := atoiFixed(s[8:10])
	if !(ok1 && ok2 && ok3) || month < 1 || month > 12 {
		return time.Time{}, false
	}
	var hour, minute, sec, nsec, offset int
	rest := s[10:]
	if rest != "" {
		if c := rest[0]; c != 'T' && c != 't' && c != ' ' {
			return time.Time{}, false
		}
		rest = rest[1:]
		var ok bool
		if hour, minute, sec, nsec, rest, ok = scanClock(rest); !ok {
			return time.Time{}, false
		}
		if offset, ok = scanISOZone(rest); !ok {
			return time.Time{}, false
		}
	}
	return civilTime(year, time.Month(month), day, hour, minute, sec, nsec, offset)
}

// scanClock reads "hh:mm", "hh:mm:ss" or "hh:mm:ss" with a fraction after
// "." or "," (digits past the ninth are dropped) and returns what follows.
func scanClock(s string) (hour, minute, sec, nsec int, rest string, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, 0, 0, 0, "", false
	}
	h, ok1 := atoiFixed(s[0:2])
	m, ok2 := atoiFixed(s[3:5])
	if !(ok1 && ok2) || h > 23 || m > 59 {
		return 0, 0, 0, 0, "", false
	}
	rest = s[5:]
	if len(rest) >= 3 && rest[0] == ':' {
		v, ok := atoiFixed(rest[1:3])
		if !ok || v > 59 {
			return 0, 0, 0, 0, "", false
		}
		sec, rest = v, rest[3:]
		if len(rest) >= 2 && (rest[0] == '.' || rest[0] == ',') && isDigit(rest[1]) {
			nsec, rest = scanFraction(rest[1:])
		}
	}
	return h, m, sec, nsec, rest, true
}

// scanFraction reads the digits of a fraction of a second as nanoseconds;
// digits past the ninth are read and dropped.
func scanFraction(s string) (nsec int, rest string) {
	i, scale := 0, 100000000
	for ; i < len(s) && isDigit(s[i]); i++ {
		nsec += int(s[i]-'0') * scale
		scale /= 10
	}
	return nsec, s[i:]
}

// scanISOZone reads what follows the clock of an ISO time: nothing, "Z",
// or an offset (+hh:mm, +hhmm, +hh), optionally after one space and
// optionally followed by a space and a zone name, or " UTC" / " GMT". It
// returns the offset east of UTC in seconds.
func scanISOZone(s string) (int, bool) {
	switch s {
	case "", "Z", "z", " UTC", " GMT", "UTC", "GMT":
		return 0, true
	}
	if s[0] == ' ' {
		s = s[1:]
	}
	off, rest, ok := scanOffset(s)
	if !ok {
		return 0, false
	}
	if rest != "" {
		if rest[0] != ' ' || !isZoneName(rest[1:]) {
			return 0, false
		}
	}
	return off, true
}

// scanOffset reads "Z", "+hh", "+hhmm" or "+hh:mm" (or "-...") and returns
// the offset east of UTC in seconds and what follows.
func scanOffset(s string) (off int, rest string, ok bool) {
	if s != "" && (s[0] == 'Z' || s[0] == 'z') {
		return 0, s[1:], true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, "", false
	}
	h, okH := atoiFixed(s[1:3])
	if !okH || h > 23 {
		return 0, "", false
	}
	m, rest := 0, s[3:]
	switch {
	case len(rest) >= 3 && rest[0] == ':':
		v, okM := atoiFixed(rest[1:3])
		if !okM || v > 59 {
			return 0, "", false
		}
		m, rest = v, rest[3:]
	case len(rest) >= 2 && isDigit(rest[0]) && isDigit(rest[1]):
		v, _ := atoiFixed(rest[0:2])
		if v > 59 {
			return 0, "", false
		}
		m, rest = v, rest[2:]
	}
	off = (h*60 + m) * 60
	if s[0] == '-' {
		off = -off
	}
	return off, rest, true
}

// isZoneName reports whether s is a zone abbreviation such as UTC or CEST.
func isZoneName(s string) bool {
	if len(s) < 1 || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// civilTime is the time of a calendar date and clock at offset seconds east
// of UTC, in UTC; ok is false for a day the month does not have.
func civilTime(year int, month time.Month, day, hour, minute, sec, nsec, offset int) (time.Time, bool) {
	if month < time.January || month > time.December || day < 1 || day > daysIn(month, year) {
		return time.Time{}, false
	}
	return time.Date(year, month, day, hour, minute, sec-offset, nsec, time.UTC), true
}

// daysIn is the number of days of month in year (proleptic Gregorian).
func daysIn(month time.Month, year int) int {
	switch month {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// parseEpochText parses seconds since 1970 written in decimal, an optional
// "-" and fraction included ("1717236000", "1717236000.123"), exactly and
// without allocating. A value outside years 1 to 9999 is not a time: a time
// in milliseconds read as seconds would be one.
func parseEpochText(s string) (time.Time, bool) {
	neg := s != "" && s[0] == '-'
	if neg {
		s = s[1:]
	}
	i := 0
	var sec int64
	for ; i < len(s) && isDigit(s[i]); i++ {
		if i >= 12 { // past year 9999 already
			return time.Time{}, false
		}
		sec = sec*10 + int64(s[i]-'0')
	}
	if i == 0 {
		return time.Time{}, false
	}
	nsec := 0
	if i < len(s) {
		if s[i] != '.' || i+1 == len(s) {
			return time.Time{}, false
		}
		var rest string
		if nsec, rest = scanFraction(s[i+1:]); rest != "" {
			return time.Time{}, false
		}
	}
	if neg {
		sec, nsec = -sec, -nsec
	}
	t := time.Unix(sec, int64(nsec)).UTC()
	return t, InRange(t)
}

// floatSecondsTime converts float seconds since 1970 (a record time, or a
// number typed as a time). A value outside years 1 to 9999, NaN or an
// infinity is not a time.
func floatSecondsTime(f float64) (time.Time, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < float64(MinTime.Unix()) || f >= float64(MaxTime.Unix()+1) {
		return time.Time{}, false
	}
	// A float64 near the present resolves about 0.2 µs: round the fraction
	// to the microsecond, so 1717236000.123 is 123 ms and not 122.999906 ms
	// (which truncates to 122 in a BSON date).
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC(), true
}

// intSecondsTime converts integer seconds since 1970; a value outside
// years 1 to 9999 is not a time.
func intSecondsTime(sec int64) (time.Time, bool) {
	if sec < MinTime.Unix() || sec > MaxTime.Unix() {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseCLFTime parses the Common Log Format time "10/Oct/2000:13:55:36 -0700"
// without allocating, honouring the offset, and returns it in UTC.
func parseCLFTime(s string) (time.Time, bool) {
	if len(s) != 26 || s[2] != '/' || s[6] != '/' || s[11] != ':' || s[14] != ':' || s[17] != ':' || s[20] != ' ' {
		return time.Time{}, false
	}
	day, ok1 := atoiFixed(s[0:2])
	year, ok2 := atoiFixed(s[7:11])
	hour, ok3 := atoiFixed(s[12:14])
	minute, ok4 := atoiFixed(s[15:17])
	sec, ok5 := atoiFixed(s[18:20])
	offHour, ok6 := atoiFixed(s[22:24])
	offMin, ok7 := atoiFixed(s[24:26])
	month := monthFromAbbrev(s[3:6])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || month == 0 ||
		hour > 23 || minute > 59 || sec > 59 || offHour > 23 || offMin > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, month, day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day { // day 0, or past the end of the month
		return time.Time{}, false
	}
	offset := time.Duration(offHour*60+offMin) * time.Minute
	switch s[21] {
	case '+':
		return t.Add(-offset), true
	case '-':
		return t.Add(offset), true
	}
	return time.Time{}, false
}

// atoiFixed parses s, which must be all ASCII digits.
func atoiFixed(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int(c)
	}
	return n, true
}

// monthFromAbbrev maps "Jan".."Dec" to its month, anything else to 0.
func monthFromAbbrev(s string) time.Month {
	switch s {
	case "Jan":
		return time.January
	case "Feb":
		return time.February
	case "Mar":
		return time.March
	case "Apr":
		return time.April
	case "May":
		return time.May
	case "Jun":
		return time.June
	case "Jul":
		return time.July
	case "Aug":
		return time.August
	case "Sep":
		return time.September
	case "Oct":
		return time.October
	case "Nov":
		return time.November
	case "Dec":
		return time.December
	}
	return 0
}
