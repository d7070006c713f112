package sim

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/fluent-bit-out-mongodb/out_mongodb/sim/server"
	"github.com/fluent-bit-out-mongodb/out_mongodb/writer"
)

// The network between the agents' processes and the server model: every
// command a process sends waits here, as a call, until the scheduler takes
// it and decides its fate (answered, lost, held and applied later, ...).
// Nothing reaches the model but through the scheduler, one command at a
// time, so a run is decided by its seed.

// call is one command in flight.
type call struct {
	proc  *process
	op    server.Op
	reply chan result
	key   string // orders the calls waiting at one step (see net.waiting)
	ctx   context.Context
	// abandoned: the caller's context ended before the scheduler took
	// the call; the command is in the network all the same.
	abandoned bool
}

// result is what a call returns to its caller.
type result struct {
	errs []error // Upserts
	err  error
	docs []bson.Raw
}

// net holds the calls in flight.
type net struct {
	mu        sync.Mutex
	pending   []*call // waiting for the scheduler
	abandoned []*call // given up by their callers, not yet decided
}

// send puts c in flight and waits for its result, or for its context to
// end: then the command is still in the network (the scheduler decides
// whether it ever applies) and the caller sees a lost connection, as the
// driver reports a command whose deadline cut it.
func (n *net) send(c *call) result {
	if c.proc.dead() || c.ctx.Err() != nil {
		// Never sent: the process is gone, or the deadline had passed.
		return failed(c.op, c.ctx.Err())
	}
	c.reply = make(chan result, 1)
	c.key = callKey(c)
	n.mu.Lock()
	n.pending = append(n.pending, c)
	n.mu.Unlock()
	select {
	case r := <-c.reply:
		return r
	case <-c.ctx.Done():
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case r := <-c.reply: // taken by the scheduler meanwhile
		return r
	default:
	}
	n.pending = slices.DeleteFunc(n.pending, func(p *call) bool { return p == c })
	c.abandoned = true
	n.abandoned = append(n.abandoned, c)
	return failed(c.op, lost(c.ctx.Err()))
}

// waiting returns the calls waiting, in a deterministic order, and the
// calls abandoned since the last step (taken out of the network's hands).
func (n *net) waiting() (pending, abandoned []*call) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pending = slices.Clone(n.pending)
	abandoned, n.abandoned = n.abandoned, nil
	byKey := func(a, b *call) int { return cmp.Compare(a.key, b.key) }
	slices.SortFunc(pending, byKey)
	slices.SortFunc(abandoned, byKey)
	return pending, abandoned
}

// take removes c from the calls waiting; false when its caller gave up
// on it meanwhile (it cannot: the scheduler runs alone).
func (n *net) take(c *call) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := slices.Index(n.pending, c)
	if i < 0 {
		return false
	}
	n.pending = slices.Delete(n.pending, i, i+1)
	return true
}

// callKey orders calls: by process, then by the command's content. The
// calls a process has in flight at once are distinct commands (each
// statement names its own bucket or document).
func callKey(c *call) string {
	var b []byte
	b = fmt.Appendf(b, "%s|%d|%s|", c.proc.name, c.op.Kind, c.op.Coll)
	for _, u := range c.op.Ups {
		b = append(b, u.Filter...)
		b = append(b, u.Update...)
	}
	for _, d := range c.op.Docs {
		b = append(b, d...)
	}
	b = append(b, c.op.Filter...)
	return string(b)
}

// failed is the result of op failing with err as a whole.
func failed(op server.Op, err error) result {
	if op.Kind == server.Upserts {
		// As MongoStore.Upserts reports an error that is not a bulk
		// write exception: every statement's.
		return result{errs: writer.Outcomes(op.Ups, nil, err)}
	}
	return result{err: err}
}

// reply is the result of op as the model answered it.
func reply(r server.Reply) result { return result{errs: r.Errs, err: r.Err, docs: r.Docs} }

// lost is the error of a command whose connection was lost under it
// (cause, when set, cut it): it may have applied.
func lost(cause error) error {
	if cause == nil {
		cause = io.EOF
	}
	return mongo.CommandError{Labels: []string{"NetworkError"}, Name: "NetworkError",
		Message: "connection(sim) incomplete read of message header: " + cause.Error(),
		Wrapped: topology.ConnectionError{Wrapped: cause}}
}

// unreachable is the error of a command that was never sent: no server
// could be selected.
func unreachable() error {
	return topology.ServerSelectionError{Wrapped: io.ErrUnexpectedEOF}
}

// serverError is an error the server answers a command with.
func serverError(code int32, name string) error {
	return mongo.CommandError{Code: code, Name: name, Message: name + " (sim)"}
}

// store is the writer.Store of one process: every command goes through the
// network.
type store struct {
	net  *net
	proc *process
}

// do sends a copy of op: the writer reuses a statement's bytes once the
// store returns, and the command may stay in the network for longer.
func (s store) do(ctx context.Context, op server.Op) result {
	op.Filter = clone(op.Filter)
	op.Query.Projection, op.Query.Sort = clone(op.Query.Projection), clone(op.Query.Sort)
	op.Ups = slices.Clone(op.Ups)
	for i, u := range op.Ups {
		op.Ups[i] = writer.Upsert{Filter: clone(u.Filter), Update: clone(u.Update), Insert: u.Insert}
	}
	op.Docs = slices.Clone(op.Docs)
	for i, d := range op.Docs {
		op.Docs[i] = clone(d)
	}
	return s.net.send(&call{proc: s.proc, op: op, ctx: ctx})
}

func clone(b bson.Raw) bson.Raw {
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}

func (s store) Upserts(ctx context.Context, coll string, ups []writer.Upsert) []error {
	return s.do(ctx, server.Op{Kind: server.Upserts, Coll: coll, Ups: ups}).errs
}

func (s store) Find(ctx context.Context, coll string, filter bson.Raw, q writer.Query) ([]bson.Raw, error) {
	r := s.do(ctx, server.Op{Kind: server.Find, Coll: coll, Filter: filter, Query: q})
	return r.docs, r.err
}

func (s store) InsertMany(ctx context.Context, coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	return s.do(ctx, server.Op{Kind: server.InsertMany, Coll: coll, Docs: docs}).err
}

func (s store) Replace(ctx context.Context, coll string, docs []bson.Raw) error {
	if len(docs) == 0 {
		return nil
	}
	return s.do(ctx, server.Op{Kind: server.Replace, Coll: coll, Docs: docs}).err
}

func (s store) UpdateMany(ctx context.Context, coll string, filter, update bson.Raw) error {
	return s.do(ctx, server.Op{Kind: server.UpdateMany, Coll: coll, Ups: []writer.Upsert{{Filter: filter, Update: update}}}).err
}

func (s store) Ping(ctx context.Context) error {
	return s.do(ctx, server.Op{Kind: server.Ping}).err
}
