package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/internal/termtext"

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
//
// Mode holds the permission bits with fs.ModeSetuid, fs.ModeSetgid and
// fs.ModeSticky (UnixMode gives them as chmod takes them). What a plain
// run would leave besides content and mode is carried too: Mtime, the
// modification time the agent left (OpWrite, OpChmod, OpSymlink);
// Xattrs, the extended attributes in the user namespace, never
// overlayfs's own (user.overlay.*, trusted.overlay.*); and Link, for a
// file with several names in the change set. security.* and trusted.*
// attributes and POSIX ACLs are not carried.
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
	// Mtime is the modification time the path is left with; zero leaves
	// it as applying makes it.
	Mtime time.Time `json:"mtime,omitzero"`
	// Xattrs, when not nil, are all the user.* extended attributes the
	// path is left with (an empty map removes every one); nil leaves them
	// as they are (OpChmod, OpChmodDir) or as staged (OpWrite).
	Xattrs map[string][]byte `json:"xattrs,omitzero"`
	// Link, on an OpWrite, is the first path (in path order) of a group
	// of names the agent gave one new file: this path is committed as
	// another name of that file, a hard link, not as a copy.
	Link string `json:"link,omitempty"`
	// Owner, on an OpWrite, is "uid:gid" when the agent (run by root)
	// changed the file's owner: the staged inode, which has it, is linked
	// in, so it is committed.
	Owner string `json:"owner,omitempty"`

	staged string // absolute path of the staged content, for Open
	// chainOut, on an OpSymlink, is set when the link, followed through
	// the other links of the workspace as committed, leads out of it
	// though its own target does not (Tx.markChainsOut).
	chainOut bool
}

// ownerText is ", owner UID:GID" for a change of owner, else "".
func ownerText(owner string) string {
	if owner == "" {
		return ""
	}
	return ", owner " + owner
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
// -rw-r--r--)", its path and target quoted by termtext.Quote, so the line is
// safe to print on a terminal. A mode shows setuid, setgid and sticky as
// ls does (-rwsr-xr-x); a hard link names its other path; a chmod says
// when the mtime or the extended attributes changed (with the same mode
// that is all it does).
func (c Change) String() string {
	p := termtext.Quote(c.Path)
	switch c.Op {
	case OpWrite:
		if c.Link != "" {
			return fmt.Sprintf("%s %s (hard link to %s, %s)%s", c.Op, p, termtext.Quote(c.Link), lsMode(c.Mode), c.xattrText())
		}
		return fmt.Sprintf("%s %s (%d bytes, %s%s)%s", c.Op, p, c.Size, lsMode(c.Mode), ownerText(c.Owner), c.xattrText())
	case OpSymlink:
		return fmt.Sprintf("%s %s -> %s", c.Op, p, termtext.Quote(c.Target))
	case OpChmod:
		s := fmt.Sprintf("%s %s %s", c.Op, p, lsMode(c.Mode))
		if !c.Mtime.IsZero() {
			s += ", mtime " + c.Mtime.UTC().Format(time.RFC3339Nano)
		}
		return s + c.xattrText()
	case OpChmodDir, OpMkdir, OpReplaceDir:
		return fmt.Sprintf("%s %s d%s%s", c.Op, p, lsMode(c.Mode)[1:], c.xattrText()) // a directory, as ls shows it
	}
	if c.Implied {
		p += " (implied)"
	}
	if c.IsDir {
		return fmt.Sprintf("%s %s/", c.Op, p)
	}
	return fmt.Sprintf("%s %s", c.Op, p)
}

// xattrText is ", xattrs user.a user.b" (names quoted), ", no xattrs"
// when all are removed, or "" when the change carries none.
func (c Change) xattrText() string {
	switch {
	case c.Xattrs == nil:
		return ""
	case len(c.Xattrs) == 0:
		return ", no xattrs"
	}
	names := make([]string, 0, len(c.Xattrs))
	for n := range c.Xattrs {
		names = append(names, termtext.Quote(n))
	}
	sort.Strings(names)
	return ", xattrs " + strings.Join(names, " ")
}

// UnixMode returns the change's mode as chmod takes it: the permission
// bits with setuid (04000), setgid (02000) and sticky (01000). The tape
// records this number.
func (c Change) UnixMode() uint32 {
	m := uint32(c.Mode.Perm())
	if c.Mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if c.Mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if c.Mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// modeBits keeps the bits of m that a change carries: permissions,
// setuid, setgid and sticky.
func modeBits(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// lsMode formats a mode as ls does: "-rwxr-xr-x", with s/S for setuid
// and setgid and t/T for sticky.
func lsMode(m fs.FileMode) string {
	b := []byte(m.Perm().String())
	special := func(i int, set bool, on, off byte) {
		if !set {
			return
		}
		if b[i] == 'x' {
			b[i] = on
		} else {
			b[i] = off
		}
	}
	special(3, m&fs.ModeSetuid != 0, 's', 'S')
	special(6, m&fs.ModeSetgid != 0, 's', 'S')
	special(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}

// isOverlayXattr reports whether an extended attribute belongs to
// overlayfs itself (user.overlay.* with userxattr, trusted.overlay.*
// without): it is the staging area's, never committed.
func isOverlayXattr(name string) bool {
	return strings.HasPrefix(name, "user.overlay.") || strings.HasPrefix(name, "trusted.overlay.")
}

// uncommittedXattr reports whether an extended attribute of a staged file
// stays out of the commit: overlayfs's own, the POSIX ACLs (which grant
// other users access beside the mode) and file capabilities (privileges
// the file's program gets).
func uncommittedXattr(name string) bool {
	switch name {
	case "system.posix_acl_access", "system.posix_acl_default", "security.capability":
		return true
	}
	return isOverlayXattr(name)
}

// DirTime is the modification time a directory is left with after a
// commit: a directory the agent made, or one whose entries changed, gets
// the time the staging area holds, as a plain run would have left it,
// instead of the commit's time. Directory times are not changes of their
// own: they are not listed, not on the tape, and applied last, where the
// file system allows (a directory owned by someone else keeps the
// commit's time).
type DirTime struct {
	Path  string    `json:"path"`
	Mtime time.Time `json:"mtime"`
}

// RefusalKind is what a refused entry was. It is the tape's
// tapefmt.RefusalKind.
type RefusalKind = tapefmt.RefusalKind

// The kinds of refused entries.
const (
	RefusedFIFO         = tapefmt.RefusedFIFO
	RefusedSocket       = tapefmt.RefusedSocket
	RefusedDevice       = tapefmt.RefusedDevice
	RefusedHardLink     = tapefmt.RefusedHardLink
	RefusedPathTooLong  = tapefmt.RefusedPathTooLong
	RefusedUnreadable   = tapefmt.RefusedUnreadable
	RefusedJukeboxState = tapefmt.RefusedJukeboxState
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
	return fmt.Sprintf("REFUSED %s %s: %s", termtext.Escape(string(r.Kind)), termtext.Quote(r.Path), termtext.Escape(r.Reason))
}

// ChangeSet is every staged change, sorted by path so that a directory
// comes before what it holds. Deletes are all listed, implied ones too.
// Refused lists, also by path, the entries that cannot be committed; a
// change set with refusals is still whole for everything else.
type ChangeSet struct {
	TxID    string    `json:"tx"`
	Changes []Change  `json:"changes"`
	Refused []Refusal `json:"refused,omitempty"`
	// DirTimes are the staged directories' modification times, set last
	// by Commit (see DirTime).
	DirTimes []DirTime `json:"dir_times,omitempty"`
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

// Files is the number of files the change set changes: its changes
// less those of folders themselves (made, emptied and made anew, given
// a new mode) and the deletes a parent's delete implies. A commit's
// answer to the SDK counts these (a folder a write needed is not a file
// the agent wrote); a deleted folder counts as one.
func (cs ChangeSet) Files() int {
	n := 0
	for _, c := range cs.Changes {
		if !c.Implied && c.Op != OpMkdir && c.Op != OpReplaceDir && c.Op != OpChmodDir {
			n++
		}
	}
	return n
}

// String lists the changes one per line, never truncated, each path
// quoted by termtext.Quote. A line about a sensitive path starts with "! " and
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
