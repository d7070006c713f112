package writer

import (
	"context"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
	"github.com/fluent-bit-out-mongodb/out_mongodb/model"
)

// dropsToPark is how many times in a row a record written alone must lose
// its connection, the server answering a command as large right after each
// time, before it counts as content the server drops connections on (some
// MongoDB-compatible servers do so on values they do not support; MongoDB
// never does). A flaky network loses the control command as readily as the
// write: where it loses any one command with a chance p, a healthy record
// meets this evidence with a chance of (p(1-p))^8, at most 1 in 65536.
const dropsToPark = 8

// maxControl bounds the control command's size: far below the 16 MiB a
// command may take, and enough to stand for any record.
const maxControl = 4 << 20

// Dropped is called after a write of size bytes of one record lost its
// connection. It sends a command as large, a find whose filter holds size
// random bytes, and reports whether the evidence is complete: drops, the
// losses in a row each followed by an answered control, has reached
// dropsToPark. A control that gets no answer resets drops to 0: the server
// or the network is failing, not the record. When the flush's deadline
// ends the count, it stands for the chunk's next attempt.
func Dropped(ctx context.Context, store Store, coll string, size int, drops *int) bool {
	return countDrop(drops, sendControl(ctx, store, coll, size))
}

// probe is the outcome of a control command.
type probe uint8

const (
	probeEnded    probe = iota // the flush's deadline passed: no evidence
	probeLost                  // no answer: the server or the network is failing
	probeAnswered              // the server answered a command as large
)

// sendControl sends the control command of size bytes, unless the flush's
// deadline has passed.
func sendControl(ctx context.Context, store Store, coll string, size int) probe {
	if ctx.Err() != nil {
		return probeEnded
	}
	err := control(ctx, store, coll, size)
	switch {
	case ctx.Err() != nil:
		return probeEnded
	case !answered(err):
		return probeLost
	}
	return probeAnswered
}

// countDrop counts a lost connection followed by the control's outcome p
// in drops and reports whether the evidence is complete.
func countDrop(drops *int, p probe) bool {
	switch p {
	case probeEnded:
		return false
	case probeLost:
		*drops = 0
		return false
	}
	*drops++
	return *drops >= dropsToPark
}

// control sends a find for an _id of size pseudo-random bytes, which
// matches nothing and which wire compression cannot shrink. The bytes
// derive from the size alone: a command is the same each time, so a
// simulated run replays exactly.
func control(ctx context.Context, store Store, coll string, size int) error {
	pad := make([]byte, min(max(size, 16), maxControl))
	rng := rand.New(rand.NewPCG(uint64(len(pad)), 0x636f6e74726f6c))
	for i := 0; i < len(pad); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(pad); j++ {
			pad[i+j] = byte(v >> (8 * j))
		}
	}
	in := bsoncore.NewArrayBuilder().AppendBinary(0, pad).Build()
	filter := bsoncore.NewDocumentBuilder().AppendDocument(model.ID,
		bsoncore.NewDocumentBuilder().AppendArray("$in", in).Build()).Build()
	_, err := store.Find(ctx, coll, bson.Raw(filter), Query{Projection: IDProjection, Limit: 1})
	return err
}

// answered reports whether err, the outcome of a command, came from the
// server: nil, or an error the server sent.
func answered(err error) bool {
	return !errkind.Of(err).Unanswered()
}
