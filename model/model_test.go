package model

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestKeyPathAndShardKey(t *testing.T) {
	// A dotted bucket_key path is stored as the nested fields it names;
	// versions before stored it as one name, its dots replaced.
	d := Docs{KeyReplaceDot: "_", KeyReplaceDollar: "_", Shard: []ShardField{{Name: "k8s.pod", Hashed: true}, {Name: Start}, {Name: ID}}}
	if got := d.KeyPath("k8s.pod"); got != "key.k8s.pod" {
		t.Errorf("KeyPath = %q, want key.k8s.pod", got)
	}
	if got := d.OldKeyPath("k8s.pod"); got != "key.k8s_pod" {
		t.Errorf("OldKeyPath = %q, want key.k8s_pod", got)
	}
	want := bson.D{{Key: "key.k8s.pod", Value: "hashed"}, {Key: "start", Value: 1}, {Key: "_id", Value: 1}}
	if got := d.ShardKey(); !equal(got, want) {
		t.Errorf("ShardKey = %v, want %v", got, want)
	}
	if (Docs{}).ShardKey() != nil {
		t.Error("no shard_key gives a shard key")
	}
	if got, old := (Docs{Flat: true}).RuleField("k8s.pod"); got != "k8s.pod" || old != "" {
		t.Errorf("flat RuleField = %q, %q, want the field as given", got, old)
	}
	if got, old := d.RuleField("k8s.pod"); got != "k8s.pod" || old != "k8s_pod" {
		t.Errorf("bucket RuleField = %q, %q, want k8s.pod, k8s_pod", got, old)
	}
	if got, old := d.RuleField("module"); got != "module" || old != "" {
		t.Errorf("bucket RuleField = %q, %q, want module and no other", got, old)
	}
}

func TestPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"module", "module"},
		{"kubernetes.pod_name", "kubernetes.pod_name"},
		{"a.$b", "a._b"}, // the configuration refuses it; made safe all the same
		{"a..b", "a._empty.b"},
	} {
		if got := Path(c.in, "_", "_"); got != c.want {
			t.Errorf("Path(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Stat("http.latency_ms", "max"); got != "stats.http.latency_ms.max" {
		t.Errorf("Stat = %q", got)
	}
	if got := CountOf("http.status", "200"); got != "counts.http.status.200" {
		t.Errorf("CountOf = %q", got)
	}
}

func TestLookupIndex(t *testing.T) {
	for _, c := range []struct {
		d    Docs
		want bson.D
	}{
		{Docs{}, bson.D{{Key: "key", Value: 1}}},
		{Docs{Window: time.Minute}, bson.D{{Key: "key", Value: 1}, {Key: "start", Value: 1}}},
		{Docs{Flat: true, TagKey: "tag", TimeKey: "ts"}, bson.D{{Key: "tag", Value: 1}, {Key: "ts", Value: 1}}},
	} {
		if got := c.d.LookupIndex(); !equal(got, c.want) {
			t.Errorf("%+v: LookupIndex = %v, want %v", c.d, got, c.want)
		}
	}
}

func TestBucketsIn(t *testing.T) {
	from, to := time.Unix(600, 0), time.Unix(1200, 0)
	got := Docs{Window: time.Minute}.BucketsIn(from, to)
	want := bson.D{
		{Key: "maxTs", Value: bson.D{{Key: "$gte", Value: from}}},
		{Key: "start", Value: bson.D{{Key: "$gt", Value: from.Add(-time.Minute)}}},
		{Key: "minTs", Value: bson.D{{Key: "$lt", Value: to}}},
		{Key: "start", Value: bson.D{{Key: "$lt", Value: to}}},
	}
	if !equal(got, want) {
		t.Errorf("BucketsIn = %v, want %v", got, want)
	}
	if got := (Docs{}).BucketsIn(time.Time{}, to); !equal(got, want[2:3]) {
		t.Errorf("open start, no window: %v, want %v", got, want[2:3])
	}
}

func equal(a, b bson.D) bool {
	x, err1 := bson.Marshal(a)
	y, err2 := bson.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
