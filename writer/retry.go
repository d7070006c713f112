package writer

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
)

// Retry is the backoff between attempts of one write inside a flush: a
// random wait in [0, min(Cap, Base*2^attempt)) ("full jitter"), until the
// flush's context ends.
type Retry struct {
	Base, Cap time.Duration
	// Sleep waits d or until ctx ends; nil means a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a random number in [0, n]; nil means math/rand. The
	// simulator gives a seeded one, so that a run is decided by its seed.
	Jitter func(n int64) int64
}

// DefaultRetry is the backoff used by the plugin.
var DefaultRetry = Retry{Base: 50 * time.Millisecond, Cap: 2 * time.Second}

// Wait sleeps before attempt number attempt (from 1) and returns the
// context's error when the flush deadline has passed.
func (r Retry) Wait(ctx context.Context, attempt int) error {
	d := r.Base << min(attempt, 16)
	if d > r.Cap || d <= 0 {
		d = r.Cap
	}
	if r.Jitter != nil {
		d = time.Duration(r.Jitter(int64(d)))
	} else {
		d = time.Duration(rand.Int64N(int64(d) + 1))
	}
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do runs fn until it succeeds or fails with an error that is not worth
// retrying, waiting between attempts; it gives up when ctx ends.
func (r Retry) Do(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if !errkind.Of(err).Retried() {
			return err
		}
		if werr := r.Wait(ctx, attempt); werr != nil {
			return err
		}
	}
}
