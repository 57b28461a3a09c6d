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

// String formats the change as one line: "write a/b.txt (12 bytes)".
func (c Change) String() string {
	switch c.Op {
	case OpWrite:
		return fmt.Sprintf("%s %s (%d bytes, %v)", c.Op, c.Path, c.Size, c.Mode.Perm())
	case OpSymlink:
		return fmt.Sprintf("%s %s -> %s", c.Op, c.Path, c.Target)
	case OpChmod, OpChmodDir, OpMkdir, OpReplaceDir:
		return fmt.Sprintf("%s %s %v", c.Op, c.Path, c.Mode.Perm())
	}
	if c.IsDir {
		return fmt.Sprintf("%s %s/", c.Op, c.Path)
	}
	return fmt.Sprintf("%s %s", c.Op, c.Path)
}

// ChangeSet is every staged change, sorted by path so that a directory
// comes before what it holds. Deletes are all listed, implied ones too.
type ChangeSet struct {
	TxID    string   `json:"tx"`
	Changes []Change `json:"changes"`
}

// Empty reports whether nothing is staged.
func (cs ChangeSet) Empty() bool { return len(cs.Changes) == 0 }

// Counts returns how many changes of each operation the set holds.
func (cs ChangeSet) Counts() map[Op]int {
	m := map[Op]int{}
	for _, c := range cs.Changes {
		m[c.Op]++
	}
	return m
}

// String lists the changes one per line, never truncated.
func (cs ChangeSet) String() string {
	var b strings.Builder
	for _, c := range cs.Changes {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}
