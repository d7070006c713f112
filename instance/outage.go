package instance

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fluent-bit-out-mongodb/out_mongodb/conf"
	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// remindEvery is how often an outage that lasts is logged again.
const remindEvery = time.Minute

// outage follows whether MongoDB can be reached, and says so in one line
// a person reads: when a command first finds no server (errkind.NoServer),
// cause first; once a minute while it lasts; and when a command is
// answered again, with how long it lasted and the chunks given back
// meanwhile. The driver's full error goes to debug.
type outage struct {
	log   *Logger
	hosts string // the uri's hosts, without credentials
	now   func() time.Time

	mu       sync.Mutex
	down     bool
	since    time.Time // the first failure of this outage
	reminded time.Time // the last line about it
	retried  int       // chunks given back to Fluent Bit during it
	answered time.Time // the start of the last command answered
}

func newOutage(log *Logger, uri string) *outage {
	return &outage{log: log, hosts: conf.Hosts(uri), now: time.Now}
}

// failed takes the error of a command (or a flush) started at start; say
// false: the caller said it already. An
// error that is not a failed server selection says nothing of an outage;
// nor does one of a command started before a command that was answered
// (a flush still waiting when the server came back).
func (o *outage) failed(err error, start time.Time, say bool) {
	if !errkind.NoServer(err) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if start.Before(o.answered) {
		return
	}
	now := o.now()
	o.log.Debugf("MongoDB at %s: %s", o.hosts, conf.RedactText(err.Error()))
	switch {
	case !o.down:
		o.down, o.since, o.reminded, o.retried = true, now, now, 0
		if !say {
			return
		}
		o.log.Warnf("cannot reach MongoDB at %s: %s; retrying (chunk kept by Fluent Bit)", o.hosts, conf.RedactText(errkind.Cause(err)))
	case now.Sub(o.reminded) >= remindEvery:
		o.reminded = now
		o.log.Warnf("cannot reach MongoDB at %s for %s: %s; %s retried so far (kept by Fluent Bit)",
			o.hosts, now.Sub(o.since).Round(time.Second), conf.RedactText(errkind.Cause(err)), count(int64(o.retried), "chunk"))
	}
}

// retry counts a chunk given back to Fluent Bit.
func (o *outage) retry() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		o.retried++
	}
}

// ok takes a command started at start that the server answered.
func (o *outage) ok(start time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if start.After(o.answered) {
		o.answered = start
	}
	if !o.down {
		return
	}
	o.down = false
	o.log.Infof("MongoDB at %s is back after %s (%s retried)", o.hosts, o.now().Sub(o.since).Round(time.Second), count(int64(o.retried), "chunk"))
}

// watched is a writer.Store that tells an outage how each command went:
// answered (nil, or an error from a server), or no server found.
type watched struct {
	writer.Store
	o *outage
}

// note passes the outcome of a command started at start to the outage:
// any error of the server is an answer.
func (w watched) note(start time.Time, err error) {
	switch {
	case err == nil || errkind.Of(err).FromServer():
		w.o.ok(start)
	default:
		w.o.failed(err, start, true)
	}
}

func (w watched) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	start := time.Now()
	errs := w.Store.Upserts(ctx, coll, ups)
	var first error
	for _, err := range errs {
		if err == nil || errkind.Of(err).FromServer() {
			w.o.ok(start)
			return errs
		}
		first = err
	}
	if first != nil {
		w.o.failed(first, start, true)
	}
	return errs
}

func (w watched) Find(ctx context.Context, coll string, filter bson.Raw, q writer.Query) ([]bson.Raw, error) {
	start := time.Now()
	docs, err := w.Store.Find(ctx, coll, filter, q)
	w.note(start, err)
	return docs, err
}

func (w watched) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	start := time.Now()
	err := w.Store.InsertMany(ctx, coll, docs)
	w.note(start, err)
	return err
}

func (w watched) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	start := time.Now()
	err := w.Store.Replace(ctx, coll, docs)
	w.note(start, err)
	return err
}

func (w watched) UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error {
	start := time.Now()
	err := w.Store.UpdateMany(ctx, coll, filter, update)
	w.note(start, err)
	return err
}

func (w watched) Ping(ctx context.Context) error {
	start := time.Now()
	err := w.Store.Ping(ctx)
	w.note(start, err)
	return err
}
