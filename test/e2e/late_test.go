package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/instance"
	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// lateStore loses the replies of chunk X's first writes and applies them
// late: after X's next attempt has started, while chunk Y holds the
// group, just before Y's write. Y then finds the bucket moved and writes
// after X's records; X's next attempt must find them there, not store
// them again after Y's.
type lateStore struct {
	writer.Store
	mu       sync.Mutex
	phase    int // 1: lose X's writes; 2: hold Y's first write until X looks
	held     []writer.Upsert
	coll     string
	xLooked  chan struct{} // closed when X's next attempt looks for its writes
	released bool
}

func (l *lateStore) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	l.mu.Lock()
	phase := l.phase
	var mine bool
	for _, u := range ups {
		mine = mine || bytes.Contains(u.Update, []byte("chunk-x"))
	}
	if phase == 1 && mine {
		if l.held == nil {
			l.held, l.coll = append([]writer.Upsert(nil), ups...), coll
		}
		l.mu.Unlock()
		errs := make([]error, len(ups))
		for i := range errs {
			errs[i] = errTimeout // the reply is lost
		}
		return errs
	}
	release := phase == 2 && !mine && !l.released
	if release {
		l.released = true
	}
	l.mu.Unlock()
	if release {
		// X's next attempt looks for its earlier writes now, or (taking
		// the group's lock first) only once Y is done.
		select {
		case <-l.xLooked:
		case <-time.After(time.Second):
		}
		for i, err := range l.Store.Upserts(context.Background(), l.coll, l.held) { // applied late
			if err != nil {
				panic(i)
			}
		}
	}
	return l.Store.Upserts(ctx, coll, ups)
}

func (l *lateStore) Find(ctx context.Context, coll string, filter bson.Raw, q writer.Query) ([]bson.Raw, error) {
	l.mu.Lock()
	if l.phase == 2 && filter.Lookup("ops").Type != 0 && bytes.Contains(filter, []byte("host")) {
		select {
		case <-l.xLooked:
		default:
			if l.xLookupIsX(filter) {
				close(l.xLooked)
			}
		}
	}
	l.mu.Unlock()
	return l.Store.Find(ctx, coll, filter, q)
}

// xLookupIsX tells X's lookup from Y's: they name different chunk tags.
func (l *lateStore) xLookupIsX(filter bson.Raw) bool {
	return bytes.Contains(filter, l.xTag())
}

func (l *lateStore) xTag() []byte {
	ops := bson.Raw(l.held[0].Update).Lookup("$push", "ops", "$each")
	vals, _ := ops.Array().Values()
	return vals[0].Value // the first op element of X's write
}

// A write of an earlier attempt whose reply was lost, applied late while
// another chunk holds the group, is found by the next attempt: every
// record is stored once.
func TestLateWriteOfAnEarlierAttempt(t *testing.T) {
	e := newDBEnv(t)
	ls := &lateStore{phase: 1, xLooked: make(chan struct{})}
	m := conf.Map{}
	for k, v := range e.props("bucket_key", "host", "flush_timeout", "5s") {
		m.Set(k, v)
	}
	var log harness.Buffer
	in, err := instance.NewWith(m, "mongodb.0", &log, instance.Seams{Wrap: func(s writer.Store) writer.Store { ls.Store = s; return ls }})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Exit()
	at := time.Now().UTC()
	chunk := func(name string, from int) []byte {
		var recs [][]byte
		for i := from; i < from+10; i++ {
			recs = append(recs, record(t, at.Add(time.Duration(i)*time.Millisecond), kv{"host", "a"}, kv{"c", name}, kv{"id", fmt.Sprint(name, i)}))
		}
		return join(recs)
	}
	x, y := chunk("chunk-x", 0), chunk("chunk-y", 10)
	if st := in.Flush("app.log", x); st != sink.Retry {
		t.Fatalf("X's first attempt: %v, want a retry (its replies are lost)\n%s", st, &log)
	}
	ls.mu.Lock()
	ls.phase = 2
	ls.mu.Unlock()
	var wg sync.WaitGroup
	var stY, stX sink.Status
	wg.Add(2)
	go func() { defer wg.Done(); stY = in.Flush("app.log", y) }()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond) // Y takes the group first
		stX = in.Flush("app.log", x)
	}()
	wg.Wait()
	if stY != sink.Done || stX != sink.Done {
		t.Fatalf("Y %v, X's next attempt %v\n%s", stY, stX, &log)
	}
	count, _ := e.storedIDs("logs")
	total := 0
	for id, n := range count {
		total += n
		if n != 1 {
			t.Errorf("record %s stored %d times", id, n)
		}
	}
	if total != 20 {
		t.Errorf("%d records stored, want 20", total)
	}
}
