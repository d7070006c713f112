package mongolog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Records of one second come back in the order they were in their chunk,
// by query (with and without a limit) and by follow: a sort on time alone
// is not stable, so entries of equal times are ordered by their place in
// their bucket too. 200 records of 5 seconds, 3 keys interleaved, in one
// chunk: each key's records come back in the chunk's order.
func TestQueryEqualTimesInChunkOrder(t *testing.T) {
	db := testDB(t)
	k := keys(t, db, "bucket_key", "app")
	at := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	var recs []rec
	for i := range 200 {
		recs = append(recs, rec{at.Add(time.Duration(i/40) * time.Second), fmt.Sprintf(`{"app":"%c","path":"items/%d","i":%d}`, 'a'+i%3, i, i)})
	}
	store(t, k, 200, recs...)
	inOrder := func(what string, got []bson.Raw, n int) {
		t.Helper()
		last := map[string]int32{}
		var lastAt time.Time
		var order []int32
		for _, rec := range got {
			app, i := rec.Lookup("app").StringValue(), rec.Lookup("i").Int32()
			ts := rec.Lookup("ts").Time()
			if prev, ok := last[app]; ok && i < prev || ts.Before(lastAt) {
				t.Errorf("%s: items/%d (app %s, %s) after items/%d; the order: %v", what, i, app, ts.Format(time.RFC3339), prev, order)
				return
			}
			last[app], lastAt = i, ts
			order = append(order, i)
		}
		if len(got) != n {
			t.Errorf("%s: %d records, want %d", what, len(got), n)
		}
	}
	r := reader(t, k)
	for _, limit := range []int{0, 150} {
		var got []bson.Raw
		if err := r.Query(context.Background(), Query{Limit: limit}, func(rec bson.Raw) error {
			got = append(got, append(bson.Raw(nil), rec...))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := len(recs)
		if limit > 0 {
			want = limit
		}
		inOrder(fmt.Sprintf("query --limit %d", limit), got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []bson.Raw
	_ = r.Follow(ctx, Query{}, 10*time.Millisecond, time.Second, func(rec bson.Raw) error {
		if got = append(got, append(bson.Raw(nil), rec...)); len(got) == len(recs) {
			cancel()
		}
		return nil
	})
	inOrder("follow", got, len(recs))
}
