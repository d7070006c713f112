// Package errkind is the one place an error gets a class. The writer,
// the sink, collection set-up and the metrics all ask it: Of says what
// happened (the server refused, did not answer, said "not now", ...), and
// each Kind says what the writer does about it (Class) and whether set-up
// waits for it (Passing) or goes on without what it asked for (Refusal).
//
// It depends on the driver only, so that every package can use it.
package errkind

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// Kind is what an error says happened.
type Kind int

const (
	// None: no error.
	None Kind = iota
	// Duplicate: the document exists (duplicate key).
	Duplicate
	// Conflict: a write conflict (112).
	Conflict
	// Poison: the server refuses this content (document too large,
	// invalid field name, ...); the same content never succeeds.
	Poison
	// Unavailable: the server answered "not now": an election, a
	// shutdown, a lost primary, a RetryableWriteError label.
	Unavailable
	// Timeout: no answer in time (a context deadline, a driver or
	// socket timeout, maxTimeMS expired).
	Timeout
	// Network: the server could not be reached or the connection was
	// lost (a NetworkError label, a failed server selection); a command
	// may or may not have run.
	Network
	// Stopped: the work was stopped (a canceled context, a disconnected
	// client).
	Stopped
	// Refused: the server answered with any other error (a command or
	// option it does not support or allow, a code not known here); it
	// answers the same again.
	Refused
	// Panic: a bug, caught as a *PanicError.
	Panic
	// Unknown: an error that did not come from the driver or the server.
	Unknown
)

var kindNames = [...]string{"none", "duplicate key", "write conflict", "poison", "unavailable",
	"timeout", "network", "stopped", "refused", "panic", "unknown"}

func (k Kind) String() string { return kindNames[k] }

// Class is what the writer does about an error.
type Class int

const (
	// OK: no error.
	OK Class = iota
	// DuplicateKey: the document exists; an upsert's filter did not match
	// it (the bucket is full, already holds this write, or was created
	// concurrently).
	DuplicateKey
	// WriteConflict: retry the same write after a backoff.
	WriteConflict
	// Transient: retry the same write after a backoff, and give the chunk
	// back to Fluent Bit when the flush deadline passes. Every error that
	// is not about the content is transient to the writer: the chunk is
	// retried rather than dropped.
	Transient
	// Poisoned: retrying the same content can never succeed.
	Poisoned
)

func (c Class) String() string {
	return [...]string{"ok", "duplicate key", "write conflict", "transient", "poison"}[c]
}

// Class is what the writer does about an error of kind k.
func (k Kind) Class() Class {
	switch k {
	case None:
		return OK
	case Duplicate:
		return DuplicateKey
	case Conflict:
		return WriteConflict
	case Poison:
		return Poisoned
	}
	return Transient
}

// Passing reports whether the same command can succeed later unchanged:
// the server did not answer, or answered "not now". Set-up waits for it
// (the chunk is retried) instead of writing without what it prepares.
func (k Kind) Passing() bool {
	return k == Conflict || k == Unavailable || k.Unanswered()
}

// Refusal reports whether the server answered no and will answer the
// same again: set-up goes on without what it asked for.
func (k Kind) Refusal() bool {
	switch k {
	case Duplicate, Poison, Refused:
		return true
	}
	return false
}

// Unanswered reports whether the command got no answer: it was lost, cut
// short or never sent (it may or may not have run).
func (k Kind) Unanswered() bool {
	switch k {
	case Timeout, Network, Stopped:
		return true
	}
	return false
}

// FromServer reports whether the server answered the command with an
// error of its own.
func (k Kind) FromServer() bool {
	switch k {
	case Duplicate, Conflict, Poison, Unavailable, Refused:
		return true
	}
	return false
}

// ConnectionLost reports whether err says the connection a command went
// on was lost or cut (the driver's NetworkError label): the command may
// have applied. It also holds for a timeout on the socket, which Of calls
// Timeout.
func ConnectionLost(err error) bool { return mongo.IsNetworkError(err) }

// NamespaceExists reports whether the server answered that the collection
// exists already (code 48, NamespaceExists).
func NamespaceExists(err error) bool { return commandCode(err, 48) }

// NamespaceNotFound reports whether the server answered that there is no
// such collection (code 26, NamespaceNotFound).
func NamespaceNotFound(err error) bool { return commandCode(err, 26) }

func commandCode(err error, code int) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.HasErrorCode(code)
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

// Error codes that mean "not now": elections, shutdowns, lost primaries.
var unavailableCodes = []int{
	6,     // HostUnreachable
	7,     // HostNotFound
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	189,   // PrimarySteppedDown
	262,   // ExceededTimeLimit
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
	63,    // StaleShardVersion
	150,   // StaleEpoch
	202,   // NetworkInterfaceExceededTimeLimit
	234,   // RetryChangeStream
	50,    // MaxTimeMSExpired
	133,   // FailedToSatisfyReadPreference
}

// Of sorts an error, as the driver returns it (wrapped or not), into its
// kind.
func Of(err error) Kind {
	if err == nil {
		return None
	}
	var p *PanicError
	if errors.As(err, &p) {
		return Panic
	}
	if errors.Is(err, driver.ErrDocumentTooLarge) {
		return Poison
	}
	if mongo.IsDuplicateKeyError(err) {
		return Duplicate
	}
	var se mongo.ServerError
	server := errors.As(err, &se)
	switch {
	case server && se.HasErrorCode(112):
		return Conflict
	case errors.Is(err, context.DeadlineExceeded) || mongo.IsTimeout(err):
		return Timeout
	case mongo.IsNetworkError(err) || errors.As(err, &topology.ServerSelectionError{}):
		return Network
	case errors.Is(err, context.Canceled) || errors.Is(err, mongo.ErrClientDisconnected):
		return Stopped
	case !server:
		return Unknown
	case se.HasErrorLabel("RetryableWriteError"):
		return Unavailable
	}
	for _, c := range unavailableCodes {
		if se.HasErrorCode(c) {
			return Unavailable
		}
	}
	for _, c := range poisonCodes {
		if se.HasErrorCode(c) {
			return Poison
		}
	}
	return Refused
}
