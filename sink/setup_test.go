package sink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/fluent-bit-out-mongodb/out_mongodb/bucketer"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
	"github.com/fluent-bit-out-mongodb/out_mongodb/parser"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

func setupSink(t *testing.T, setup func(context.Context, string, bool) error) (*Sink, []byte) {
	t.Helper()
	return testSink(t, func(o *Options) { o.Setup = setup })
}

// testSink is a bucket-mode sink writing nowhere, with the options set
// changes, and a chunk of three records.
func testSink(t *testing.T, set func(*Options)) (*Sink, []byte) {
	t.Helper()
	chunk, err := os.ReadFile("../test/testdata/chunk-dummy-3.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{
		Mode: model.ModeBucket, Collection: "logs", DeadLetter: "logs_dead", TagKey: "tag", Idempotent: true,
		MaxInflight: 1, FlushTimeout: time.Minute, MaxRecords: 1000, MaxBytes: 1 << 20,
		Decoder: parser.Options{TimeKey: "ts", ReplaceDot: "_", ReplaceDollar: "_"},
		Grouper: bucketer.Config{TagKey: "tag", Window: time.Minute, ReplaceDot: "_", ReplaceDollar: "_"},
	}
	set(&opt)
	s, err := New(opt, nullStore{}, writer.DefaultRetry, quietLog{})
	if err != nil {
		t.Fatal(err)
	}
	return s, chunk
}

// A Setup failure that need not hold up writes (an index the server lacks)
// is logged and the chunk written; Setup is not tried again at every flush.
func TestSetupFailureDoesNotBlockWrites(t *testing.T) {
	calls := 0
	s, chunk := setupSink(t, func(context.Context, string, bool) error {
		calls++
		return errors.New("TTL indexes are not implemented")
	})
	for i, tag := range []string{"a", "b"} {
		if res := s.Flush(context.Background(), tag, chunk); res.Status != Done || res.Stored != 3 {
			t.Fatalf("flush %d: %v, %d stored", i, res.Err, res.Stored)
		}
	}
	if calls != 1 {
		t.Errorf("Setup called %d times, want 1 (retried only after %v)", calls, setupRetry)
	}
}

// A Setup failure that must hold up writes (a capped collection not yet
// created) gives the chunk back, and Setup runs again on the retry.
func TestSetupRequiredRetriesTheChunk(t *testing.T) {
	fail := true
	calls := 0
	s, chunk := setupSink(t, func(context.Context, string, bool) error {
		calls++
		if fail {
			return &layout.Required{Err: errors.New("cannot create capped collection")}
		}
		return nil
	})
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Retry || res.Stored != 0 {
		t.Fatalf("first flush: %v, %d stored, want a retry with nothing stored", res.Status, res.Stored)
	}
	fail = false
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Done || res.Stored != 3 {
		t.Fatalf("retry: %v %v, %d stored", res.Status, res.Err, res.Stored)
	}
	if calls != 2 {
		t.Errorf("Setup called %d times, want 2", calls)
	}
}

// A Setup that fails because the server did not answer gives the chunk
// back, and the next flush runs Setup again (not only after setupRetry).
func TestSetupUnreachableRetriesTheChunk(t *testing.T) {
	calls := 0
	s, chunk := setupSink(t, func(ctx context.Context, coll string, _ bool) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("creating index on %s: server selection error: %w", coll, context.DeadlineExceeded)
		}
		return nil
	})
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Retry {
		t.Fatalf("flush with the server unreachable: %v, want retry", res.Status)
	}
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Done || res.Stored != 3 {
		t.Fatalf("flush after: %v (%v), %d stored", res.Status, res.Err, res.Stored)
	}
	if calls != 2 {
		t.Errorf("Setup called %d times, want 2", calls)
	}
}

// A Setup that fails because the server answered "not now" (an election,
// a shutdown, a lost primary) or could not be reached gives the chunk back
// with nothing written, and the next flush runs Setup again before
// writing: no write goes without the collection's indexes.
func TestSetupDuringStepDownRetriesTheChunk(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"shutdown in progress", mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}},
		{"not writable primary", mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}},
		{"interrupted at shutdown", mongo.CommandError{Code: 11600, Name: "InterruptedAtShutdown"}},
		{"interrupted by a state change", mongo.CommandError{Code: 11602, Name: "InterruptedDueToReplStateChange"}},
		{"primary stepped down", mongo.CommandError{Code: 189, Name: "PrimarySteppedDown"}},
		{"not primary, no secondary ok", mongo.CommandError{Code: 13435, Name: "NotPrimaryNoSecondaryOk"}},
		{"not primary or secondary", mongo.CommandError{Code: 13436, Name: "NotPrimaryOrSecondary"}},
		{"connection lost", mongo.CommandError{Labels: []string{"NetworkError"}, Message: "connection reset by peer"}},
		{"no server selected", topology.ServerSelectionError{Wrapped: errors.New("no primary available")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			s, chunk := setupSink(t, func(ctx context.Context, coll string, _ bool) error {
				calls++
				if calls == 1 {
					return fmt.Errorf("creating index {key: 1, start: 1} on %s: %w", coll, c.err)
				}
				return nil
			})
			if res := s.Flush(context.Background(), "a", chunk); res.Status != Retry || res.Stored != 0 {
				t.Fatalf("flush during the set-up failure: %v, %d stored, want a retry with nothing stored", res.Status, res.Stored)
			}
			if res := s.Flush(context.Background(), "a", chunk); res.Status != Done || res.Stored != 3 {
				t.Fatalf("flush after: %v (%v), %d stored", res.Status, res.Err, res.Stored)
			}
			if calls != 2 {
				t.Errorf("Setup called %d times, want 2 (again at the next flush, not after %v)", calls, setupRetry)
			}
		})
	}
}

// A Setup the server refuses for good (an option it does not support) is
// logged and the chunk written, as before.
func TestSetupRefusedWritesAnyway(t *testing.T) {
	calls := 0
	s, chunk := setupSink(t, func(context.Context, string, bool) error {
		calls++
		return mongo.CommandError{Code: 115, Name: "CommandNotSupported", Message: "TTL indexes are not implemented"}
	})
	if res := s.Flush(context.Background(), "a", chunk); res.Status != Done || res.Stored != 3 {
		t.Fatalf("flush: %v (%v), %d stored, want done with 3 stored", res.Status, res.Err, res.Stored)
	}
	if calls != 1 {
		t.Errorf("Setup called %d times, want 1", calls)
	}
}

// Concurrent flushes of chunks for one new collection run its Setup once:
// the others wait for it. (Without the wait every flush would run it; the
// test cannot fail when Setup runs once, whatever the scheduling.)
func TestSetupOncePerCollectionUnderConcurrency(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	s, chunk := setupSink(t, func(context.Context, string, bool) error {
		if calls.Add(1) == 1 {
			<-release
		}
		return nil
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := s.Flush(context.Background(), fmt.Sprintf("tag%d", i), chunk); res.Status != Done {
				t.Errorf("flush %d: %v (%v)", i, res.Status, res.Err)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the other flushes reach Setup, if they would
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("Setup ran %d times for one collection, want once", n)
	}
}
