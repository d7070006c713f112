// Package writer stores buckets and flat documents in MongoDB with atomic,
// idempotent writes, and parks records that cannot be stored.
package writer

import "github.com/fluent-bit-out-mongodb/out_mongodb/errkind"

// Class is what the writer does about an error (see errkind, where every
// error gets its kind and each kind its class).
type Class = errkind.Class

const (
	// OK: no error.
	OK = errkind.OK
	// Duplicate: the document exists; an upsert's filter did not match it
	// (the bucket is full, already holds this write, or was created
	// concurrently).
	Duplicate = errkind.DuplicateKey
	// Conflict: a write conflict; retry the same write after a backoff.
	Conflict = errkind.WriteConflict
	// Transient: network errors, timeouts, elections, refusals not about
	// the content, unknown errors; retry the same write after a backoff,
	// and give the chunk back to Fluent Bit when the flush deadline passes.
	Transient = errkind.Transient
	// Poison: the server refuses this content (document too large, invalid
	// field, ...); retrying the same content can never succeed.
	Poison = errkind.Poisoned
)

// Classify sorts a driver error into the class that decides the writer's
// next step: the class of its errkind kind. Errors not about the content
// count as transient: the chunk is retried rather than dropped.
func Classify(err error) Class { return errkind.Of(err).Class() }

// PanicError is a panic caught below a flush, with its value and stack.
type PanicError = errkind.PanicError
