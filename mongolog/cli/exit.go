package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/fluent-bit-out-mongodb/out_mongodb/mongolog"
)

// The exit codes of mongolog.
const (
	ExitOK          = 0
	ExitProblems    = 1
	ExitUsage       = 2
	ExitServer      = 3
	ExitInterrupted = 130
)

// exitCodes are the exit codes with their meaning, as --help and the
// README show them.
var exitCodes = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "done, nothing wrong found (query --follow also ends so at Ctrl-C)"},
	{ExitProblems, "problems found (check, verify), each one printed"},
	{ExitUsage, "usage or configuration error: a flag, an argument, a condition, a key, a file"},
	{ExitServer, "MongoDB unreachable, or it refused what was asked (authentication, a command)"},
	{ExitInterrupted, "interrupted (Ctrl-C, SIGTERM) before the end"},
}

// exitHelp is exitCodes as a paragraph of --help.
func exitHelp() string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %-3d  %s\n", c.Code, c.Meaning)
	}
	return b.String()
}

// ProblemsError is what check and verify return when they found problems
// (and printed them).
type ProblemsError struct{ N int }

func (e *ProblemsError) Error() string {
	if e.N == 1 {
		return "1 problem found"
	}
	return fmt.Sprintf("%d problems found", e.N)
}

// InterruptedError is a command stopped by Ctrl-C (its context ending),
// with what to do next.
type InterruptedError struct{ Next string }

func (e *InterruptedError) Error() string { return "interrupted: " + e.Next }
func (e *InterruptedError) Unwrap() error { return context.Canceled }

// ExitCode maps what a command returned to mongolog's exit code. Nothing
// else decides one:
//   - nil: 0
//   - a *ProblemsError: 1
//   - the command's context ended (Ctrl-C, SIGTERM): 130
//   - a *mongolog.ServerError (no answer to a ping) or an error of the
//     driver that comes from the server or the network (a command error, a
//     write error, a network error, a timeout): 3
//   - anything else (flags, arguments, conditions, keys, files): 2
func ExitCode(err error) int {
	var problems *ProblemsError
	var srv *mongolog.ServerError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &problems):
		return ExitProblems
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &srv) || fromServer(err):
		return ExitServer
	}
	return ExitUsage
}

// fromServer reports whether err is the driver's report of a server that
// refused a command or could not be talked to.
func fromServer(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.Is(err, mongo.ErrClientDisconnected)
}
