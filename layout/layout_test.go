package layout

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The kept range is counted back from the period of now: whole days, ISO
// weeks or months, across month and year ends, whatever the time of day.
func TestPartitionsOldest(t *testing.T) {
	cases := []struct {
		period Period
		keep   int
		now    string
		want   string // name of the oldest kept partition
	}{
		{Day, 1, "2024-06-01T23:59:59Z", "logs_20240601"},
		{Day, 3, "2024-06-01T00:00:00Z", "logs_20240530"},
		{Day, 3, "2024-01-02T05:00:00+09:00", "logs_20231230"}, // 2024-01-01T20:00Z
		{Month, 1, "2024-06-30T12:00:00Z", "logs_202406"},
		{Month, 3, "2024-02-29T12:00:00Z", "logs_202312"},
		{Month, 14, "2024-02-01T00:00:00Z", "logs_202301"},
		{Week, 1, "2024-06-02T23:59:59Z", "logs_2024w22"}, // a Sunday: still week 22
		{Week, 1, "2024-06-03T00:00:00Z", "logs_2024w23"}, // Monday
		{Week, 2, "2021-01-03T12:00:00Z", "logs_2020w52"}, // 2021-01-03 is in 2020w53
		{Week, 3, "2026-01-01T00:00:00Z", "logs_2025w51"}, // 2026-01-01 is in 2026w01
	}
	for _, c := range cases {
		p := Partitions{Base: "logs", Period: c.period, Keep: c.keep}
		if got := p.Collection(p.Oldest(at(t, c.now))); got != c.want {
			t.Errorf("%s keep %d at %s: oldest kept %s, want %s", c.period, c.keep, c.now, got, c.want)
		}
	}
	if !(Partitions{Base: "logs", Period: Day}).Oldest(time.Now()).IsZero() {
		t.Errorf("keep 0 keeps every period: want a zero oldest")
	}
}

// Partition names sort as their periods, and only names of the period's
// form belong to the partitions.
func TestPartitionNames(t *testing.T) {
	p := Partitions{Base: "logs", Period: Week}
	var prev string
	for d := at(t, "2020-12-20T00:00:00Z"); d.Before(at(t, "2027-01-10T00:00:00Z")); d = d.AddDate(0, 0, 1) {
		n := p.Collection(d)
		if n < prev {
			t.Fatalf("%s sorts before %s", n, prev)
		}
		if !p.Owns(n) {
			t.Fatalf("%s is not owned", n)
		}
		prev = n
	}
	for _, n := range []string{"logs", "logs_dead", "logs_2024w1", "logs_20240601", "logs_202406", "other_2024w01", "logs_2024x01"} {
		if p.Owns(n) {
			t.Errorf("week partitions own %s", n)
		}
	}
	if !IsPartition("logs_20240601", "logs", Day) || !IsPartition("logs_202406", "logs", Month) || IsPartition("logs_202406", "logs", Day) {
		t.Errorf("IsPartition of day and month names")
	}
	if got := (Partitions{Base: "logs"}).Collection(time.Now()); got != "logs" {
		t.Errorf("no period: %s", got)
	}
}

func TestPlanTTL(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		found  bool
		after  *int64
		want   int64
		action TTLAction
		lowers bool
	}{
		{false, nil, 259200, TTLCreate, true},
		{true, n(259200), 259200, TTLKeep, false},
		{true, n(604800), 259200, TTLChange, true},
		{true, n(259200), 604800, TTLChange, false},
		{true, nil, 259200, TTLChange, true}, // a plain index becomes a TTL index
	}
	for _, c := range cases {
		action, lowers := PlanTTL(c.found, c.after, c.want)
		if action != c.action || lowers != c.lowers {
			t.Errorf("found %v after %v want %d: %v lowers %v, want %v %v", c.found, c.after, c.want, action, lowers, c.action, c.lowers)
		}
	}
}

// expireAt is anchor + jitter + the first matching rule's offset, so that
// the index's TTL added to it gives each rule's retention.
func TestExpiry(t *testing.T) {
	e := Expiry{TTL: 7 * 24 * time.Hour, Rules: []Rule{
		{Field: "module", Value: "audit", TTL: 365 * 24 * time.Hour},
		{Field: "level", Value: "debug", TTL: 24 * time.Hour},
		{Field: "code", Value: "500", TTL: 30 * 24 * time.Hour},
	}}
	anchor := at(t, "2024-06-01T10:00:00Z")
	doc := func(kv ...any) bsoncore.Document {
		d := bson.D{}
		for i := 0; i < len(kv); i += 2 {
			d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
		}
		b, _ := bson.Marshal(d)
		return b
	}
	cases := []struct {
		doc  bsoncore.Document
		keep time.Duration // what the document lives after its anchor
	}{
		{doc("module", "audit", "level", "debug"), 365 * 24 * time.Hour}, // first match wins
		{doc("module", "pay", "level", "debug"), 24 * time.Hour},
		{doc("module", "pay", "code", int32(500)), 30 * 24 * time.Hour},
		{doc("module", "pay", "code", int64(500)), 30 * 24 * time.Hour},
		{doc("module", "pay"), 7 * 24 * time.Hour},
		{doc(), 7 * 24 * time.Hour},
	}
	for i, c := range cases {
		if got := e.At(anchor, "g", c.doc).Add(e.TTL).Sub(anchor); got != c.keep {
			t.Errorf("case %d: kept %v, want %v", i, got, c.keep)
		}
	}
	// A dotted bucket_key path is read where it is stored, nested, and in
	// a bucket of an earlier version under its old name.
	k8s := Expiry{TTL: 7 * 24 * time.Hour, Rules: []Rule{{Field: "k8s.pod", Old: "k8s_pod", Value: "audit-0", TTL: 24 * time.Hour}}}
	for _, d := range []bsoncore.Document{doc("k8s", bson.D{{Key: "pod", Value: "audit-0"}}), doc("k8s_pod", "audit-0")} {
		if got := k8s.At(anchor, "g", d).Add(k8s.TTL).Sub(anchor); got != 24*time.Hour {
			t.Errorf("key %s: kept %v, want the rule's 24h", d, got)
		}
	}
	if got := k8s.At(anchor, "g", doc("k8s", "audit-0")).Add(k8s.TTL).Sub(anchor); got != 7*24*time.Hour {
		t.Errorf("a key whose k8s is no document: kept %v, want the TTL", got)
	}
	j := Expiry{TTL: time.Hour, Jitter: time.Hour}
	a, b := j.At(anchor, "one", nil), j.At(anchor, "two", nil)
	if a == b || a.Before(anchor) || !a.Before(anchor.Add(time.Hour)) || a != j.At(anchor, "one", nil) {
		t.Errorf("jitter: %v and %v for two ids, anchor %v", a, b, anchor)
	}
}

// The backfill computes from a stored bucket the expireAt its writes give.
func TestStoredBucket(t *testing.T) {
	e := Expiry{TTL: 24 * time.Hour, Jitter: time.Hour, Rules: []Rule{{Field: "host", Value: "a", TTL: 48 * time.Hour}}}
	key, _ := bson.Marshal(bson.D{{Key: "host", Value: "a"}})
	end, maxTs := at(t, "2024-06-01T10:01:00Z"), at(t, "2024-06-01T10:00:59Z")
	want := e.Bucket("grp", key, end, maxTs)
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: "grp-3"}, {Key: "key", Value: bson.Raw(key)}, {Key: "end", Value: end}, {Key: "maxTs", Value: maxTs}})
	if got, ok := e.StoredBucket(d); !ok || !got.Equal(want) {
		t.Errorf("stored bucket: %v %v, want %v", got, ok, want)
	}
	if want.Sub(end) < 24*time.Hour || want.Sub(end) >= 25*time.Hour {
		t.Errorf("rule offset and jitter: %v after the window end", want.Sub(end))
	}
	noWindow, _ := bson.Marshal(bson.D{{Key: "_id", Value: "grp-0"}, {Key: "key", Value: bson.Raw(key)}, {Key: "maxTs", Value: maxTs}})
	if got, _ := e.StoredBucket(noWindow); !got.Equal(e.Bucket("grp", key, time.Time{}, maxTs)) {
		t.Errorf("no window: anchored at %v", got)
	}
	if _, ok := e.StoredBucket(bson.Raw(key)); ok {
		t.Errorf("a document that is no bucket has no expireAt")
	}
}
