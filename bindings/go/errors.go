package herald

import "fmt"

// Error is an error from Herald: the C ABI's code (negative) and its
// message. Match it with errors.Is against ErrGone, ErrInvalid, ...
type Error struct {
	// Code is the C ABI's herald_status (HERALD_E_*).
	Code int
	// Op is the call that failed ("apply", "watch", ...).
	Op string
	// Message is Herald's message (herald_last_error).
	Message string
}

func (e *Error) Error() string {
	name := codeNames[e.Code]
	if name == "" {
		name = fmt.Sprintf("code %d", e.Code)
	}
	switch {
	case e.Op == "" && e.Message == "":
		return "herald: " + name
	case e.Message == "":
		return fmt.Sprintf("herald: %s: %s", e.Op, name)
	case e.Op == "":
		return fmt.Sprintf("herald: %s: %s", name, e.Message)
	}
	return fmt.Sprintf("herald: %s: %s: %s", e.Op, name, e.Message)
}

// Is matches any *Error of the same code: errors.Is(err, herald.ErrGone).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The C ABI's error codes, for errors.Is.
var (
	// ErrNull: a required pointer was null (a bug in the binding).
	ErrNull = &Error{Code: -1}
	// ErrHandle: the handle is closed or was never valid; every call on
	// a closed Engine, Writer or Watch returns it.
	ErrHandle = &Error{Code: -2}
	// ErrInvalid: an argument out of its domain (a malformed selector,
	// a bad name, options Kubernetes refuses, a bad continue token).
	ErrInvalid = &Error{Code: -3}
	// ErrGone: the version asked for is older than the history (410):
	// list again.
	ErrGone = &Error{Code: -4}
	// ErrTooLargeResourceVersion: the version asked for was not reached
	// in time (504): retry.
	ErrTooLargeResourceVersion = &Error{Code: -5}
	// ErrOutOfOrder: a write at or below the engine's version.
	ErrOutOfOrder = &Error{Code: -6}
	// ErrStopped: the engine was stopped.
	ErrStopped = &Error{Code: -7}
	// ErrNotReady: the engine holds no list yet (429): retry.
	ErrNotReady = &Error{Code: -8}
	// ErrPanic: a bug in Herald, caught at the boundary.
	ErrPanic = &Error{Code: -9}
	// ErrSystem: the operating system refused a resource.
	ErrSystem = &Error{Code: -10}
	// ErrOther: any other error (the message says which).
	ErrOther = &Error{Code: -11}
)

var codeNames = map[int]string{
	-1:  "null argument",
	-2:  "bad or closed handle",
	-3:  "invalid argument",
	-4:  "gone",
	-5:  "too large resource version",
	-6:  "out of order",
	-7:  "stopped",
	-8:  "not ready",
	-9:  "panic in herald",
	-10: "system error",
	-11: "error",
}

func newError(op string, code int, msg string) error {
	return &Error{Code: code, Op: op, Message: msg}
}

// closedError is the error of a call on a handle this binding closed.
func closedError(op, what string) error {
	return &Error{Code: ErrHandle.Code, Op: op, Message: what + " is closed"}
}
