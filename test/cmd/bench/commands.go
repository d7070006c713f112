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
// statements exactly once, as the writer reads it (writer.Outcomes): each
// upsert known by the _id it inserted (some servers number upserts among
// themselves), errors at distinct statements none of them upserted, and
// the matched, upserted and failed statements adding up to all of them.
// The writer sends the statements of a reply it cannot trust again alone,
// which costs commands the formula does not count.
func accounts(reply bson.Raw, ids []string) bool {
	n, _ := reply.Lookup("n").AsInt64OK()
	ups, errs := values(reply, "upserted"), values(reply, "writeErrors")
	at := map[string]int{}
	for i, id := range ids {
		at[id] = i
	}
	done := map[int]bool{}
	for _, u := range ups {
		id, _ := u.Document().Lookup("_id").StringValueOK()
		i, ok := at[id]
		if !ok || done[i] {
			return false
		}
		done[i] = true
	}
	for _, e := range errs {
		i, ok := e.Document().Lookup("index").AsInt64OK()
		if !ok || i < 0 || i >= int64(len(ids)) || done[int(i)] {
			return false
		}
		done[int(i)] = true
	}
	return int(n)+len(errs) == len(ids) && len(at) == len(ids)
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
