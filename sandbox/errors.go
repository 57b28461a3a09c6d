package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Sentinel errors. Every refusal wraps one of these in a *PathError that
// names the path, so callers can both test with errors.Is and print a
// message a person understands.
var (
	// ErrEscape reports a path that would leave the workspace: "..", an
	// absolute path, or a symlink or hard link that points outside.
	ErrEscape = errors.New("sandbox: path escapes the workspace")
	// ErrInvalidPath reports an empty path, the workspace root where a file
	// is needed, or a name holding a NUL byte.
	ErrInvalidPath = errors.New("sandbox: invalid path")
	// ErrStatePath reports a path inside the booth's own state directory.
	ErrStatePath = errors.New("sandbox: path is inside the booth state directory")
	// ErrForeignState reports a path at or under another workspace's
	// jukebox state folder (a .jukebox below the top), which no commit
	// changes: staged there, it would be refused at the commit.
	ErrForeignState = errors.New("sandbox: path is in another workspace's jukebox state folder, which a commit never changes")
	// ErrKept reports a change to what a transaction was told to keep
	// (Tx.Keep): the tape being recorded, or its folder.
	ErrKept = errors.New("sandbox: the commit would change the tape being recorded (or its folder), which it keeps")
	// ErrRefused reports a commit of a transaction begun Whole whose change
	// set refuses an entry (RefusedError).
	ErrRefused = errors.New("sandbox: staged entries cannot be committed")
	// ErrSpecialFile reports a device file, fifo or socket where a file is
	// needed (to copy it up). In a change set they are refused entries
	// (ChangeSet.Refused), not errors.
	ErrSpecialFile = errors.New("sandbox: special file refused")
	// ErrHardLink reports a file that is hard-linked elsewhere. In a change
	// set such a file is a refused entry (ChangeSet.Refused), not an error.
	ErrHardLink = errors.New("sandbox: hard link refused")
	// ErrSymlinkLoop reports too many symlinks while resolving a path.
	ErrSymlinkLoop = errors.New("sandbox: too many levels of symbolic links")
	// ErrConflict reports that the real workspace changed under a staged path.
	ErrConflict = errors.New("sandbox: conflicting change on the real side")
	// ErrClosed reports use of a transaction after commit or rollback.
	ErrClosed = errors.New("sandbox: transaction is closed")
	// ErrStateReplaced: a folder of the transaction's state (the staging
	// area, the transaction's folder, .jukebox) is not the one Begin made.
	ErrStateReplaced = errors.New("sandbox: the transaction's state was replaced")
	// ErrNoTx reports that no booth transaction matches the request.
	ErrNoTx = errors.New("no such booth transaction here (jukebox booth status lists them)")
	// ErrUntrusted reports a transaction whose tx.json this user's
	// jukebox did not write for this workspace (planted with a cloned
	// repository, an earlier release's, tampered or copied): it is
	// listed and can be discarded, never opened or committed.
	ErrUntrusted = errors.New("sandbox: transaction not made by this jukebox in this workspace")
	// ErrNoSavepoint reports an unknown savepoint name.
	ErrNoSavepoint = errors.New("sandbox: no such savepoint")
	// ErrCrash is returned by a test failpoint to simulate a crash: the
	// commit stops where it is and leaves its state for Recover.
	ErrCrash = errors.New("sandbox: simulated crash")
	// ErrNoResolver reports a journal naming a participant kind that Recover
	// was not given a resolver for.
	ErrNoResolver = errors.New("sandbox: no resolver for participant")
)

// PathError is a refusal or failure that concerns one workspace path.
type PathError struct {
	Op   string // what was attempted: "write", "stage", "commit", ...
	Path string // the path as given, or as found in the staging area
	Err  error  // a sentinel above, or an underlying I/O error
}

// Error formats the refusal as "sandbox: OP PATH: reason".
func (e *PathError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Op, e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(op, path string, err error) error {
	return &PathError{Op: op, Path: path, Err: err}
}

// Conflict is one path changed on the real side since Begin.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ConflictError lists every conflict that made Commit refuse.
type ConflictError struct {
	Conflicts []Conflict
}

// Error lists the conflicting paths.
func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s:", ErrConflict, termtext.Count(len(e.Conflicts), "path", "paths"))
	for _, c := range e.Conflicts {
		fmt.Fprintf(&b, " %s (%s);", c.Path, c.Reason)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// RefusedError is the commit of a transaction begun Whole (Options.Whole)
// whose change set refuses entries: nothing was applied, and the
// transaction is open.
type RefusedError struct {
	Refused []Refusal
}

// Error lists the refused entries.
func (e *RefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s, nothing committed (the transaction is open: remove them or roll back):", ErrRefused, termtext.Count(len(e.Refused), "path", "paths"))
	for _, r := range e.Refused {
		fmt.Fprintf(&b, " %s (%s);", termtext.Quote(r.Path), termtext.Escape(r.Reason)) // an agent's names: shown safely
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }
