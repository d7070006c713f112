package main

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
)

// commandCounter counts the commands the driver sends, by name, and the
// update replies that do not account for each statement exactly once.
type commandCounter struct {
	mu    sync.Mutex
	names map[string]int
	// ids holds the _id of each statement of the update commands in
	// flight, by request id.
	ids       map[int64][]string
	untrusted int
}

func newCommandCounter() *commandCounter {
	return &commandCounter{names: map[string]int{}, ids: map[int64][]string{}}
}

func (c *commandCounter) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.names[e.CommandName]++
			if e.CommandName == "update" {
				c.ids[e.RequestID] = statementIDs(e.Command)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if ids, ok := c.ids[e.RequestID]; ok {
				delete(c.ids, e.RequestID)
				if !accounts(e.Reply, ids) {
					c.untrusted++
				}
			}
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.ids, e.RequestID)
		},
	}
}

// take returns the commands counted since the last take, their total, and
// how many update replies among them did not account for their statements.
func (c *commandCounter) take() (names map[string]int, total, untrusted int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names, untrusted = c.names, c.untrusted
	for _, n := range names {
		total += n
	}
	c.names, c.untrusted = map[string]int{}, 0
	return names, total, untrusted
}

// statementIDs is the filter _id of each statement of an update command.
func statementIDs(cmd bson.Raw) []string {
	vals := values(cmd, "updates")
	ids := make([]string, len(vals))
	for i, v := range vals {
		ids[i], _ = v.Document().Lookup("q", "_id").StringValueOK()
	}
	return ids
}

// accounts reports whether an update reply accounts for each of its
// statements exactly once: every upsert named at its own statement's
// index, and the matched, upserted and failed statements adding up to all
// of them. FerretDB v1 names an upsert that follows a matched statement
// at the wrong index; the writer then trusts only the upserts it names by
// _id and sends the other statements again alone (the README's bulk
// writes), which costs commands the formula does not count.
func accounts(reply bson.Raw, ids []string) bool {
	n, _ := reply.Lookup("n").AsInt64OK()
	ups, errs := values(reply, "upserted"), values(reply, "writeErrors")
	for _, u := range ups {
		i, _ := u.Document().Lookup("index").AsInt64OK()
		id, _ := u.Document().Lookup("_id").StringValueOK()
		if i < 0 || i >= int64(len(ids)) || ids[i] != id {
			return false
		}
	}
	return int(n)+len(errs) == len(ids)
}

// values is the array under key in doc; none when there is no such array.
func values(doc bson.Raw, key string) []bson.RawValue {
	arr, ok := doc.Lookup(key).ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	return vals
}
