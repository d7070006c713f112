// Package layout decides where documents go and when they leave: the names
// of collections and their time partitions, each document's expireAt, the
// options and indexes the plugin creates collections with (TTL, capped,
// compression, validation, sharding), changes to the TTL of collections
// that exist, and the dropping of expired partitions. The sink and the
// instance ask it; nothing else names a collection or computes an expiry.
package layout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Period is the time span of one partition.
type Period string

const (
	None  Period = ""      // one collection
	Day   Period = "day"   // <base>_YYYYMMDD
	Week  Period = "week"  // <base>_YYYYwWW, ISO weeks
	Month Period = "month" // <base>_YYYYMM
)

// Suffix is the longest suffix a partition of p adds to its base name, as
// a user reads it.
func (p Period) Suffix() string {
	switch p {
	case Day:
		return "_YYYYMMDD"
	case Week:
		return "_YYYYwWW"
	case Month:
		return "_YYYYMM"
	}
	return ""
}

// Partitions names the time-partitioned collections of one base
// collection: Base + "_" + the UTC period of a record's time. Names sort as
// their periods. Keep, when above 0, is how many periods are kept, counted
// back from the current one: the kept range starts Keep-1 periods before
// the period of now, whatever the records' times say.
type Partitions struct {
	Base   string
	Period Period
	Keep   int
	// Bases, when set, stands for Base in Owns and DropOld: the
	// partitions of every base it accepts (a templated collection's).
	Bases func(base string) bool
}

// Collection is where a document of time t goes.
func (p Partitions) Collection(t time.Time) string {
	if p.Period == None {
		return p.Base
	}
	t = t.UTC()
	switch p.Period {
	case Week:
		y, w := t.ISOWeek()
		return fmt.Sprintf("%s_%04dw%02d", p.Base, y, w)
	case Month:
		return p.Base + "_" + t.Format("200601")
	}
	return p.Base + "_" + t.Format("20060102")
}

// Start is the start of the period holding t.
func (p Partitions) Start(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	switch p.Period {
	case Month:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case Week:
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return day.AddDate(0, 0, -(int(day.Weekday())+6)%7) // back to Monday
	}
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Oldest is the start of the oldest kept period at now; zero when every
// period is kept.
func (p Partitions) Oldest(now time.Time) time.Time {
	if p.Keep <= 0 || p.Period == None {
		return time.Time{}
	}
	s := p.Start(now)
	switch p.Period {
	case Month:
		return s.AddDate(0, -(p.Keep - 1), 0)
	case Week:
		return s.AddDate(0, 0, -7*(p.Keep-1))
	}
	return s.AddDate(0, 0, -(p.Keep - 1))
}

// Owns reports whether name is a partition of p (of any time).
func (p Partitions) Owns(name string) bool {
	_, ok := p.Split(name)
	return ok
}

// Split is the base of partition name of p, ok false when name is not one.
func (p Partitions) Split(name string) (base string, ok bool) {
	n := len(p.Period.Suffix())
	if p.Period == None || len(name) <= n {
		return "", false
	}
	base = name[:len(name)-n]
	if !IsPartition(name, base, p.Period) {
		return "", false
	}
	if p.Bases != nil {
		return base, p.Bases(base)
	}
	return base, base == p.Base
}

// IsPartition reports whether name has the form of a partition of base for
// period.
func IsPartition(name, base string, period Period) bool {
	rest, ok := strings.CutPrefix(name, base+"_")
	if !ok {
		return false
	}
	digits := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(c rune) bool { return c < '0' || c > '9' })
	}
	switch period {
	case Day:
		return len(rest) == 8 && digits(rest)
	case Month:
		return len(rest) == 6 && digits(rest)
	case Week:
		return len(rest) == 7 && rest[4] == 'w' && digits(rest[:4]) && digits(rest[5:])
	}
	return false
}

// DropOld drops the partitions of p whose whole period lies before the
// kept range at now (see Partitions and Old), and returns the names it
// dropped.
func DropOld(ctx context.Context, db *mongo.Database, p Partitions, now time.Time) ([]string, error) {
	if p.Keep <= 0 || p.Period == None {
		return nil, nil
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, n := range p.Old(names, now) {
		if err := db.Collection(n).Drop(ctx); err != nil {
			return dropped, fmt.Errorf("dropping partition %s: %w", n, err)
		}
		dropped = append(dropped, n)
	}
	return dropped, nil
}

// Old are the partitions of p among names whose whole period lies before
// the kept range at now, sorted. Partitions of later periods, even of the
// future, are kept.
func (p Partitions) Old(names []string, now time.Time) []string {
	if p.Keep <= 0 || p.Period == None {
		return nil
	}
	q := p
	q.Base = ""
	oldest := q.Collection(p.Oldest(now)) // the suffixes sort as their periods
	var old []string
	for _, n := range names {
		if base, ok := p.Split(n); ok && n[len(base):] < oldest {
			old = append(old, n)
		}
	}
	slices.Sort(old)
	return old
}
