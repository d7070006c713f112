package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluent-bit-out-mongodb/out_mongodb/errkind"
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
// else decides one, and what an error of the driver means comes from the
// one classifier of the project (errkind):
//   - nil: 0
//   - a *ProblemsError: 1
//   - the command's context ended (Ctrl-C, SIGTERM): 130
//   - a *mongolog.ServerError (no answer to the first ping), an error the
//     server answered with, or a command it did not answer (network,
//     timeout, a disconnected client): 3
//   - anything else (flags, arguments, conditions, keys, files): 2
func ExitCode(err error) int {
	var problems *ProblemsError
	var srv *mongolog.ServerError
	kind := errkind.Of(err)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &problems):
		return ExitProblems
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &srv) || kind.FromServer() || kind.Unanswered():
		return ExitServer
	}
	return ExitUsage
}
