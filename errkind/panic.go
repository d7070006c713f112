package errkind

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic caught below a flush: its value and the stack
// where it was raised.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// Recovered is the error of a panic with value r, taken with the current
// stack: call it in the deferred function that recovers.
func Recovered(r any) *PanicError { return &PanicError{Value: r, Stack: debug.Stack()} }

// Guard runs fn and returns a panic in it as a *PanicError, so a bug below
// a flush goroutine costs a retry of the chunk, not the agent.
func Guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Recovered(r)
		}
	}()
	return fn()
}
