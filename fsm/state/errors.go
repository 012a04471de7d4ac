package state

import "fmt"

// Placement's error codes (upstream placement/errors.py), shown to clients
// from microversion 1.23.
const (
	CodeDefault                    = "placement.undefined_code"
	CodeInventoryInUse             = "placement.inventory.inuse"
	CodeConcurrentUpdate           = "placement.concurrent_update"
	CodeDuplicateName              = "placement.duplicate_name"
	CodeProviderInUse              = "placement.resource_provider.inuse"
	CodeProviderCannotDeleteParent = "placement.resource_provider.cannot_delete_parent"
	CodeProviderNotFound           = "placement.resource_provider.not_found"
	CodeQueryDuplicateKey          = "placement.query.duplicate_key"
	CodeQueryBadValue              = "placement.query.bad_value"
	CodeQueryMissingValue          = "placement.query.missing_value"
)

// Kind says what sort of failure an Error is; the HTTP layer maps it to a
// status code (BadRequest 400, NotFound 404, Conflict 409).
type Kind int

const (
	BadRequest Kind = iota
	NotFound
	Conflict
)

// Error is a rejection of a command or query, with the wording and code a
// Placement client expects.
type Error struct {
	Kind   Kind
	Code   string
	Detail string
	// Uncaught marks upstream's NotFound for a provider or class looked
	// up by uuid or name, which upstream's handlers let escape (a 404
	// without Vary: httpapi.writeStateError); a handler that catches it
	// rewords it into an error of its own.
	Uncaught bool
}

func (e *Error) Error() string { return e.Detail }

func newError(kind Kind, code, format string, args ...any) *Error {
	if code == "" {
		code = CodeDefault
	}
	return &Error{Kind: kind, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Errorf builds a BadRequest error with the default code.
func Errorf(format string, args ...any) *Error { return newError(BadRequest, "", format, args...) }

// NotFoundf builds a NotFound error with the default code.
func NotFoundf(format string, args ...any) *Error { return newError(NotFound, "", format, args...) }

// Conflictf builds a Conflict error with the given code.
func Conflictf(code, format string, args ...any) *Error {
	return newError(Conflict, code, format, args...)
}

// WithCode returns a copy of e carrying code.
func (e *Error) WithCode(code string) *Error {
	c := *e
	c.Code = code
	return &c
}
