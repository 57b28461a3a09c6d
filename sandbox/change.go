package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Op is the kind of one staged change. It is the tape's file-change
// operation, so a change is recorded as it is staged.
type Op = tapefmt.FileOp

// The operations a change set holds. Every path in a change set is
// slash-separated and relative to the workspace.
const (
	OpWrite      = tapefmt.OpWrite      // regular file with new content and mode
	OpSymlink    = tapefmt.OpSymlink    // symlink with Target
	OpMkdir      = tapefmt.OpMkdir      // new directory (replacing any non-directory)
	OpReplaceDir = tapefmt.OpReplaceDir // old directory emptied and made anew (opaque)
	OpDelete     = tapefmt.OpDelete     // file, symlink or whole directory removed
	OpChmod      = tapefmt.OpChmod      // same content, new mode
	OpChmodDir   = tapefmt.OpChmodDir   // directory with a new mode
)

// Change is one entry of a change set.
type Change struct {
	Path   string      `json:"path"`
	Op     Op          `json:"op"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	Size   int64       `json:"size,omitempty"`
	Target string      `json:"target,omitempty"` // OpSymlink
	IsDir  bool        `json:"is_dir,omitempty"` // OpDelete of a directory
	// Implied marks a delete that follows from a parent's delete or
	// replace: listed so that every deleted path is shown, skipped by apply.
	Implied bool `json:"implied,omitempty"`

	staged string // absolute path of the staged content, for Open
}

// Open reads the staged content of an OpWrite change. It fails for other
// operations and once the transaction is finished.
func (c *Change) Open() (io.ReadCloser, error) {
	if c.Op != OpWrite || c.staged == "" {
		return nil, fmt.Errorf("sandbox: %s %s has no content", c.Op, c.Path)
	}
	return os.Open(c.staged)
}

// String formats the change as one line, "write a/b.txt (12 bytes,
// -rw-r--r--)", its path and target quoted by QuotePath, so the line is
// safe to print on a terminal.
func (c Change) String() string {
	p := QuotePath(c.Path)
	switch c.Op {
	case OpWrite:
		return fmt.Sprintf("%s %s (%d bytes, %v)", c.Op, p, c.Size, c.Mode.Perm())
	case OpSymlink:
		return fmt.Sprintf("%s %s -> %s", c.Op, p, QuotePath(c.Target))
	case OpChmod, OpChmodDir, OpMkdir, OpReplaceDir:
		return fmt.Sprintf("%s %s %v", c.Op, p, c.Mode.Perm())
	}
	if c.Implied {
		p += " (implied)"
	}
	if c.IsDir {
		return fmt.Sprintf("%s %s/", c.Op, p)
	}
	return fmt.Sprintf("%s %s", c.Op, p)
}

// RefusalKind is what a refused entry was. It is the tape's
// tapefmt.RefusalKind.
type RefusalKind = tapefmt.RefusalKind

// The kinds of refused entries.
const (
	RefusedFIFO        = tapefmt.RefusedFIFO
	RefusedSocket      = tapefmt.RefusedSocket
	RefusedDevice      = tapefmt.RefusedDevice
	RefusedHardLink    = tapefmt.RefusedHardLink
	RefusedPathTooLong = tapefmt.RefusedPathTooLong
	RefusedUnreadable  = tapefmt.RefusedUnreadable
)

// Refusal is an entry the agent left in the staging area that the booth
// cannot commit: a fifo, socket or device, a hard-linked file, a path
// over PATH_MAX, or one it could not read. It is listed, never applied;
// the rest of the change set is unaffected. A refused directory stands
// for everything under it.
type Refusal struct {
	Path   string      `json:"path"`
	Kind   RefusalKind `json:"kind"`
	Reason string      `json:"reason"`
}

// String formats the refusal as one line, safe to print:
// "REFUSED fifo run/pipe: a fifo cannot be committed".
func (r Refusal) String() string {
	return fmt.Sprintf("REFUSED %s %s: %s", SafeText(string(r.Kind)), QuotePath(r.Path), SafeText(r.Reason))
}

// ChangeSet is every staged change, sorted by path so that a directory
// comes before what it holds. Deletes are all listed, implied ones too.
// Refused lists, also by path, the entries that cannot be committed; a
// change set with refusals is still whole for everything else.
type ChangeSet struct {
	TxID    string    `json:"tx"`
	Changes []Change  `json:"changes"`
	Refused []Refusal `json:"refused,omitempty"`
}

// Empty reports whether nothing is staged: no change and no refusal.
func (cs ChangeSet) Empty() bool { return len(cs.Changes) == 0 && len(cs.Refused) == 0 }

// Counts returns how many changes of each operation the set holds, and
// under tapefmt.OpRefused how many entries were refused.
func (cs ChangeSet) Counts() map[Op]int {
	m := map[Op]int{}
	for _, c := range cs.Changes {
		m[c.Op]++
	}
	if len(cs.Refused) > 0 {
		m[tapefmt.OpRefused] = len(cs.Refused)
	}
	return m
}

// String lists the changes one per line, never truncated, each path
// quoted by QuotePath. A line about a sensitive path starts with "! " and
// is followed by one saying why (Sensitive); other lines start with two
// spaces. Refused entries follow, one "REFUSED" line each. Summary is the
// heading that goes with it.
func (cs ChangeSet) String() string {
	var b strings.Builder
	for _, c := range cs.Changes {
		if why := c.Sensitive(); len(why) > 0 {
			fmt.Fprintf(&b, "! %s\n    ^ sensitive: %s\n", c.String(), strings.Join(why, "; "))
			continue
		}
		fmt.Fprintf(&b, "  %s\n", c.String())
	}
	for _, r := range cs.Refused {
		fmt.Fprintf(&b, "%s\n", r.String())
	}
	return b.String()
}
