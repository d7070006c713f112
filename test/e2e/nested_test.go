package e2e

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A dotted bucket_key, stats or count_by path is stored as the nested
// fields it names: key.kubernetes.pod_name, stats.http.latency_ms.max,
// counts.http.status.500. A plain driver finds a pod's buckets by the
// path, sorts by a stat's path, and a ttl_rules rule on the dotted key
// reads it where it is stored.
func TestDottedPathsStoredNested(t *testing.T) {
	e := newDBEnv(t)
	props := []string{"bucket_key", "kubernetes.pod_name", "stats", "http.latency_ms", "count_by", "http.status",
		"bucket_window", "1m", "ttl", "7d", "ttl_rules", "kubernetes.pod_name=audit-0:1d"}
	in, _, log := monitored(t, e, props...)
	at := time.Now().UTC().Truncate(time.Minute).Add(-time.Hour)
	var recs [][]byte
	for i, r := range []struct {
		pod             string
		latency, status int
	}{{"payments-7d9f", 120, 200}, {"payments-7d9f", 80, 200}, {"payments-7d9f", 300, 500}, {"web-1", 900, 200}, {"web-1", 40, 200}, {"audit-0", 10, 200}} {
		recs = append(recs, record(t, at.Add(time.Duration(i)*time.Second),
			kv{"kubernetes", map[string]any{"pod_name": r.pod}}, kv{"http", map[string]any{"latency_ms": r.latency, "status": r.status}}))
	}
	mustDone(t, in.Flush("kube.log", join(recs)), log)
	in.Exit()

	ctx := context.Background()
	coll := e.db.Collection("logs")
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "key.kubernetes.pod_name", Value: "payments-7d9f"}}); err != nil || n != 1 {
		t.Errorf(`countDocuments({"key.kubernetes.pod_name": "payments-7d9f"}) = %d, %v; want its bucket`, n, err)
	}
	var top bson.Raw
	if err := coll.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "stats.http.latency_ms.max", Value: -1}})).Decode(&top); err != nil {
		t.Fatal(err)
	}
	if pod, _ := top.Lookup("key", "kubernetes", "pod_name").StringValueOK(); pod != "web-1" {
		t.Errorf("sorted by stats.http.latency_ms.max, the first bucket is %s, want web-1's (900)", top)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "counts.http.status.500", Value: bson.D{{Key: "$gt", Value: 0}}}}); err != nil || n != 1 {
		t.Errorf(`countDocuments({"counts.http.status.500": {$gt: 0}}) = %d, %v; want payments' bucket`, n, err)
	}
	byPod := map[string]bson.Raw{}
	for _, d := range e.all("logs") {
		pod, _ := d.Lookup("key", "kubernetes", "pod_name").StringValueOK()
		byPod[pod] = d
		if got, want := d.Lookup("key").String(), `{"kubernetes": {"pod_name": "`+pod+`"}}`; got != want {
			t.Errorf("key %s, want %s", got, want)
		}
	}
	pay := byPod["payments-7d9f"]
	num := func(path ...string) int64 { n, _ := pay.Lookup(path...).AsInt64OK(); return n }
	if min, max := num("stats", "http", "latency_ms", "min"), num("stats", "http", "latency_ms", "max"); min != 80 || max != 300 {
		t.Errorf("payments' stats %s, want http.latency_ms min 80 max 300", pay.Lookup("stats"))
	}
	if ok, bad := num("counts", "http", "status", "200"), num("counts", "http", "status", "500"); ok != 2 || bad != 1 {
		t.Errorf("payments' counts %s, want http.status 200: 2, 500: 1", pay.Lookup("counts"))
	}
	// The rule's 1d against ttl 7d: audit-0's bucket expires 6 days
	// before its neighbours of the same window.
	audit, _ := byPod["audit-0"].Lookup("expireAt").TimeOK()
	web, _ := byPod["web-1"].Lookup("expireAt").TimeOK()
	if d := web.Sub(audit); audit.IsZero() || d != 6*24*time.Hour {
		t.Errorf("expireAt audit-0 %v, web-1 %v: %v apart, want the rule's 6 days", audit, web, d)
	}
}
