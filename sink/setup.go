package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/layout"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer/errclass"
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
	if v, ok := s.ready.Load(coll); ok {
		if failed, ok := v.(time.Time); !ok || time.Since(failed) < setupRetry {
			return nil
		}
	}
	err := s.opt.Setup(ctx, coll, deadLetter)
	var required *layout.Required
	switch {
	case err == nil:
		s.ready.Store(coll, true)
	case errors.As(err, &required):
		return err
	case errclass.Of(err).Passing():
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
