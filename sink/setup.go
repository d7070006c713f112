package sink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
)

// setupRetry is how long a collection whose Setup failed (without holding
// up writes) waits before Setup is tried again.
const setupRetry = 5 * time.Minute

// prepare runs Setup once per collection (deadLetter: a dead-letter
// collection). s.ready holds true for a prepared collection, or the time
// of a failed attempt.
func (s *Sink) prepare(ctx context.Context, coll string, deadLetter bool) error {
	if s.opt.Setup == nil {
		return nil
	}
	done := func() bool {
		v, ok := s.ready.Load(coll)
		if !ok {
			return false
		}
		failed, ok := v.(time.Time)
		return !ok || time.Since(failed) < setupRetry
	}
	if done() {
		return nil
	}
	// One Setup per collection at a time: concurrent flushes of a new
	// target wait for the first one's.
	mu, _ := s.preparing.LoadOrStore(coll, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if done() {
		return nil
	}
	err := s.opt.Setup(ctx, coll, deadLetter)
	var required *layout.Required
	switch {
	case err == nil:
		s.ready.Store(coll, true)
	case errors.As(err, &required):
		return err
	case errkind.Of(err).Passing():
		// Not a refusal: the server did not answer, or answered "not now"
		// (an election). The chunk waits, and the next flush sets the
		// collection up before writing.
		return fmt.Errorf("preparing collection %s: %w", coll, err)
	default:
		s.ready.Store(coll, time.Now())
		s.log.Warnf("preparing collection %s: %v (writing anyway; tried again in %v)", coll, err, setupRetry)
	}
	return nil
}
