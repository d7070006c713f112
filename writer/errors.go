// Package writer stores buckets and flat documents in MongoDB with atomic,
// idempotent writes, and parks records that cannot be stored.
package writer

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
)

// Class is what the writer does about an error.
type Class int

const (
	// OK: no error.
	OK Class = iota
	// Duplicate: the document exists; an upsert's filter did not match it
	// (the bucket is full, already holds this write, or was created
	// concurrently).
	Duplicate
	// Conflict: a write conflict; retry the same write after a backoff.
	Conflict
	// Transient: network errors, timeouts, elections, retryable errors;
	// retry the same write after a backoff, and give the chunk back to
	// Fluent Bit when the flush deadline passes.
	Transient
	// Poison: the server refuses this content (document too large, invalid
	// field, ...); retrying the same content can never succeed.
	Poison
)

func (c Class) String() string {
	return [...]string{"ok", "duplicate key", "write conflict", "transient", "poison"}[c]
}

// Error codes MongoDB returns for content it will never accept.
var poisonCodes = []int{
	2,     // BadValue
	10334, // BSONObjectTooLarge
	17419, // document too large after update
	17280, // key too large to index
	15974, // BSONObjectTooLarge (older servers)
	16755, // dotted or $ field name in a stored document
	52,    // DollarPrefixedFieldName
	56,    // EmptyFieldName
	57,    // DottedFieldName
	14,    // TypeMismatch
	4,     // NoSuchKey
	9,     // FailedToParse
	40,    // ConflictingUpdateOperators
}

// Error codes that mean "try again": elections, shutdowns, lost primaries.
var transientCodes = []int{
	6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 202, 234, 50, 133,
}

// Classify sorts a driver error into the class that decides the writer's
// next step. Unknown server errors count as transient: the chunk is retried
// rather than dropped.
func Classify(err error) Class {
	if err == nil {
		return OK
	}
	if errors.Is(err, driver.ErrDocumentTooLarge) {
		return Poison
	}
	if mongo.IsDuplicateKeyError(err) {
		return Duplicate
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		if se.HasErrorCode(112) {
			return Conflict
		}
		if se.HasErrorLabel("RetryableWriteError") {
			return Transient
		}
		for _, c := range transientCodes {
			if se.HasErrorCode(c) {
				return Transient
			}
		}
		for _, c := range poisonCodes {
			if se.HasErrorCode(c) {
				return Poison
			}
		}
	}
	// Everything else (network errors, timeouts, a disconnected client,
	// unknown server errors) is retried rather than dropped.
	return Transient
}
