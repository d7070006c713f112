package parser

import "time"

// Layouts parseLineTime tries after the Common Log Format. time.Parse also
// accepts fractional seconds right after the seconds of each of them.
var (
	// numericTimeLayouts are tried for a time that starts with a digit.
	numericTimeLayouts = []string{time.RFC3339Nano, time.DateTime}
	// namedTimeLayouts are tried for one that starts with a name: the Apache
	// error log's time, and the same without its weekday as Fluent Bit's stock
	// apache_error parser leaves it.
	namedTimeLayouts = []string{"Mon Jan _2 15:04:05 2006", "Jan _2 15:04:05 2006"}
)

// parseLineTime parses a time written in a log line: Common Log Format
// ("10/Oct/2000:13:55:36 -0700"), RFC 3339 with or without fractional
// seconds, "2006-01-02 15:04:05", or the Apache error log's
// "Wed Oct 11 14:32:52.123456 2000". A time without an offset is taken as UTC;
// the result is always in UTC.
func parseLineTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	layouts := namedTimeLayouts
	if s[0] >= '0' && s[0] <= '9' {
		if t, ok := parseCLFTime(s); ok {
			return t, true
		}
		layouts = numericTimeLayouts
	}
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

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
