package controlapi

import (
	"fmt"
	"net/http"
)

// Error types: an error answer's "type" (docs/control-api.md's table).
const (
	TypeBadRequest       = "bad_request"
	TypeUnauthorized     = "unauthorized"
	TypeSandboxViolation = "sandbox_violation"
	TypeNotFound         = "not_found"
	TypeUnavailable      = "unavailable"
	TypeNoSession        = "no_session"
	TypeCommitConflict   = "commit_conflict"
	TypeRefused          = "refused"
	TypeSQL              = "sql"
	TypeSandbox          = "sandbox"
	TypeTape             = "tape"
	TypeDiverged         = "diverged"
)

// Error is an error answer: {"error": {"type", "message", "conflicts"}}
// with its HTTP status. A Run returns one to choose the answer; the
// Client returns one for every answer that is not 200, so a caller sees
// the same value whether it called the run directly or over HTTP.
type Error struct {
	// Conflicts are a commit_conflict's paths.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Message is the message as it goes on the wire ("jukebox: ...").
	Message string `json:"message"`
	// SQLState is a sql error's SQLSTATE code, when the database gave one.
	SQLState string `json:"sqlstate,omitempty"`
	// RolledBack says that the failure ended the transaction, rolled
	// back: a commit that failed past the point of staying open.
	RolledBack bool   `json:"rolled_back,omitempty"`
	Type       string `json:"type"`
	// Status is the HTTP status it is answered with.
	Status int `json:"-"`
	// Err is the cause, when known: the run's own error in process; over
	// HTTP, mcp.ErrNotHeld for a refused call.
	Err error `json:"-"`
}

// Conflict is a path the real workspace changed under a staged change.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Error is the message.
func (e *Error) Error() string { return e.Message }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Fail is an error answer of status and type whose message is
// "jukebox: " and err's, with err as its cause.
func Fail(status int, typ string, err error) *Error {
	return &Error{Status: status, Type: typ, Message: "jukebox: " + err.Error(), Err: err}
}

// Failf is an error answer of status and type with a formatted message
// ("jukebox: " is put before it).
func Failf(status int, typ, format string, a ...any) *Error {
	return &Error{Status: status, Type: typ, Message: "jukebox: " + fmt.Sprintf(format, a...)}
}

// BadRequest is a 400 bad_request answer.
func BadRequest(format string, a ...any) *Error {
	return Failf(http.StatusBadRequest, TypeBadRequest, format, a...)
}

// errorBody is an error answer's JSON.
type errorBody struct {
	Error *Error `json:"error"`
}
