// Package errkind is the one place an error gets a kind. The writer,
// the sink, collection set-up, the metrics and mongolog all ask it: Of
// says what happened (the server refused, did not answer, said "not now",
// the connection was lost under the command, ...), and the predicates of
// a Kind say what follows from it: whether the command may have applied
// (MayHaveApplied), whether set-up waits for it (Passing) or goes on
// without what it asked for (Refusal). The writer's protocols decide on
// the kind alone.
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
	// Duplicate: the document exists (duplicate key), or a guarded update
	// that may not insert matched nothing (Missed): either way the target
	// is not in the state the write assumed.
	Duplicate
	// Conflict: a write conflict (112).
	Conflict
	// Poison: the server refuses this content (document too large,
	// invalid field name, ...); the same content never succeeds.
	Poison
	// Unavailable: the server answered "not now": an election, a
	// shutdown, a lost primary, a RetryableWriteError label.
	Unavailable
	// Timeout: no answer in time on a connection that was not lost (a
	// context deadline before the command went out, a pool or socket
	// timeout, maxTimeMS expired).
	Timeout
	// Lost: the connection a command went on was lost or cut (the
	// driver's NetworkError label, also when the flush's deadline cut
	// it): the command may have applied, as the driver's
	// prevIndefiniteErr.
	Lost
	// Unreachable: no server could be selected to send the command to
	// (a failed server selection): it was not sent.
	Unreachable
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
	"timeout", "lost", "unreachable", "stopped", "refused", "panic", "unknown"}

func (k Kind) String() string { return kindNames[k] }

// MayHaveApplied reports whether the command may have applied although
// no reply said so: its connection was lost under it. A write of this
// kind is in doubt until a read settles it.
func (k Kind) MayHaveApplied() bool { return k == Lost }

// Retried reports whether the writer repeats the same write after a
// backoff: every kind but a success, a duplicate key and content the
// server refuses. Errors not about the content are retried rather than
// the chunk dropped; past the flush's deadline the chunk goes back to
// Fluent Bit.
func (k Kind) Retried() bool {
	switch k {
	case None, Duplicate, Poison:
		return false
	}
	return true
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
	case Timeout, Lost, Unreachable, Stopped:
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

// TimedOut reports whether err says time ran out, a deadline or a
// timeout, whatever its kind: a connection cut by the flush's deadline is
// Lost and timed out.
func TimedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || mongo.IsTimeout(err)
}

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

// Missed is the error of a guarded update that may not insert (an
// update, not an upsert) and matched no document: a reply without an
// error whose count says nothing changed.
var Missed = errors.New("the update matched no document: the target is not in the state the write assumed")

// Of sorts an error, as the driver returns it (wrapped or not), into its
// kind.
func Of(err error) Kind {
	if err == nil {
		return None
	}
	if errors.Is(err, Missed) {
		return Duplicate
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
	case mongo.IsNetworkError(err):
		return Lost
	case TimedOut(err):
		return Timeout
	case errors.As(err, &topology.ServerSelectionError{}):
		return Unreachable
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
