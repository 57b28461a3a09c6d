// Package sandbox is the Shadow Booth: transactions over a workspace whose
// file writes, commands, SQL and tool calls are staged until committed.
//
// # Transactions
//
// Begin starts a transaction (Tx) with a sortable id. Nothing in the real
// workspace is touched until Commit; Rollback discards the staging area and
// leaves the workspace bit-identical. Savepoint and RollbackTo roll back
// one step and keep the rest. Diff returns the ChangeSet: writes, symlinks,
// new directories, replaced (opaque) directories, deletes and mode changes,
// sorted by path, with every deleted path listed (those under a deleted or
// replaced directory marked Implied). Change.Open reads staged content and
// Options.Observer hears begin, each change, commit and rollback, so the
// engine can write tape frames. Of Jukebox, sandbox imports only tapefmt:
// a change's Op is the tape's tapefmt.FileOp, so the operations are named
// once for the booth and the tape.
//
// # Transaction, files, runners
//
// The API has three parts, one per job:
//
//   - The transaction, Tx: Begin, Open and List (tx.go); ID, Workspace
//     and StateDir; Join, which adds a participant (participant.go);
//     StageRoot, Roots and Root, for folders outside the workspace staged
//     with it (roots.go); Savepoint and RollbackTo (savepoint.go), Diff
//     (diff.go), Commit, Rollback and Closed (commit.go). Recover
//     (recover.go) and Discard (journal.go) act on the transactions a
//     workspace holds.
//   - The file API over its staged view, Files, from Tx.Files (files.go):
//     Lstat, Stat, Open, ReadFile and ReadDir read the view (view.go);
//     WriteFile, OpenFile, Remove, RemoveAll, Mkdir, MkdirAll, Symlink and
//     Chmod stage (stage.go), and so does Rename (rename.go). Names are
//     relative to the workspace root.
//   - The runners, functions of a transaction: Exec runs a child process
//     (exec.go, with the copy fallback in copyrun.go), Shell a
//     mvdan.cc/sh interpreter (shell.go), RunWasm a WASI tool on WasiFS
//     (wasi.go, wasifs.go).
//     Exec and Shell take the Tx: a child is staged with the folders the
//     transaction stages, the copy fallback keeps its refusals and
//     conflict bases with the transaction, and the shell's commands are
//     Exec's. RunWasm and WasiFS take Files: a WASI tool reaches the
//     staged view and nothing else of the transaction.
//
// # Staging area
//
// Each transaction lives in <workspace>/.jukebox/booth/<id>/ (or under
// Options.StateRoot), never part of a change set and hidden from children.
// Keeping it inside the workspace keeps it on the same file system, so
// Commit hard-links and renames staged files into place instead of copying.
// The staging area (upper/) uses the overlayfs upper-dir format, whoever
// writes it: a character device 0/0 is a whiteout (delete) and a directory
// with the xattr user.overlay.opaque=y replaces the real one. So:
//
//   - Exec runs a child confined, with overlayfs mounted over the
//     workspace path (upper = the staging area). The init is this binary
//     re-executed (MaybeRunInit must be the first call in main): PID 1 of
//     new user, mount and PID namespaces (and a network namespace for
//     NetNone), the caller's own uid there, holding every capability of
//     that namespace. It makes the overlay, a read-only tmpfs over the
//     state root, a /tmp over the host's (an overlay, the host's /tmp
//     read-only beneath a tmpfs of the run's, its sockets unreachable:
//     the init makes the command's connect(2) calls, nsinit's
//     unixconnect_linux.go), a private tmpfs for /dev/shm
//     and clones of the
//     protected (read-only) and WriteLive paths as detached mounts, sets
//     the whole tree read-only (mount_setattr), mounts /proc for the PID
//     namespace and attaches the detached mounts. It then starts the
//     child from a thread of its own that sets no_new_privs, drops every
//     capability (root's child keeps file permissions, kill and setuid:
//     caps_linux.go), bounding set included, and loads a seccomp deny list
//     (seccomp_linux.go: classic BPF written here, refusing foreign
//     architectures too; the file system is confined by the read-only
//     mounts, which the child cannot undo without CAP_SYS_ADMIN, so
//     Landlock would add nothing there, and seccomp is what can refuse
//     mount, setns and new user namespaces); the init is not dumpable, so
//     the child cannot borrow its capabilities through ptrace or /proc.
//     When the child exits, the init exits and the
//     kernel ends every process left in the namespace before Exec returns.
//     When the kernel refuses any of this, Exec refuses to start the child
//     (ErrCannotConfine): it fails closed. Asked for by name (ModeCopy,
//     ModeReflink), it makes a reflink (or plain) copy of the staged
//     view outside the workspace (copyplace.go says where, and who
//     removes it), runs the child there, unconfined, and folds its changes, against a snapshot taken as the copy was
//     made, into the staging area: the same change set, except that a
//     deleted-and-recreated directory shows as edits inside it rather
//     than as a replace. What the user does in the real workspace during
//     the run is kept (or a conflict at commit, where the child changed
//     the same path), never undone; fifos, sockets and devices are not
//     copied and not deleted; holes stay holes. The copy stages but does
//     not confine. A one-line notice names the mode and says which. The
//     child runs under a reaper (copyreap_linux.go) that ends what it
//     started when it exits, and the copy's path is rewritten to the
//     workspace's in the text files and symlinks it wrote
//     (copyrelocate.go); binary files holding it are listed.
//   - RunWasm runs WASI preview 1 tools in process on WasiFS, a wazero
//     experimental/sys.FS over the same view; Shell is a mvdan.cc/sh
//     interpreter whose redirections, builtins and globbing go through
//     the view and whose external commands go through Exec.
//   - Files (WriteFile, OpenFile, Remove, Mkdir, Rename, ...) is the
//     in-process API the others are built on.
//
// # Commit and recovery
//
// Commit refuses with a *ConflictError listing every path changed on the
// real side since Begin: exactly, by a fingerprint taken when the path was
// first staged in process, or, for paths a child staged in the kernel
// overlay, when the real file's ctime is later than the Begin marker's
// (a change within the same clock tick as Begin can be missed there) or
// when it is gone although the overlay copied it up (its origin xattr
// says it existed).
// Then one decision record (journal.json) is written and fsynced before
// anything is applied; participants (PostgreSQL through sandbox/pgtx) are
// PREPAREd before it. Applying moves whatever stands at each changed path
// aside, by rename, into the transaction's directory (a mode change logs
// the old mode) and keeps it there until the commit is done, so every
// step can be repeated or undone: when a step fails (EACCES, ENOSPC, an
// immutable directory), the originals are put back, checked path by path
// against the state before the decision, the participants rolled back,
// and Commit returns a *CommitError naming the path and saying whether
// the workspace was restored; the transaction stays open. Recover, run by
// the commands that change state, finishes a decided commit (or undoes
// it, when a step keeps failing) and undoes an undecided one, COMMIT
// PREPARED or ROLLBACK PREPARED included. Writes go through directory
// descriptors opened with O_NOFOLLOW, so a real directory swapped for a
// symlink cannot carry a commit outside the workspace.
//
// # Staged roots
//
// Tx.StageRoot stages a folder outside the workspace with it (record
// --allow-write): a sub-transaction over that folder, kept in the
// workspace transaction's directory, mounted copy-on-write by Exec as the
// workspace is, and joined as a participant of kind "files": checked for
// conflicts with the workspace, prepared (its change set journalled,
// undecided) before the decision and applied after it; Recover resolves
// it from the workspace's journal, so the workspace and every staged root
// commit as one (roots.go). The copy fallback cannot stage them.
//
// # What a commit keeps
//
// A commit leaves what a plain run would have left, besides content:
//
//   - modes with setuid, setgid and sticky bits (Change.Mode carries
//     fs.ModeSetuid and the others; Change.UnixMode is what chmod and the
//     tape take);
//   - extended attributes in the user namespace (Change.Xattrs, the whole
//     set the path ends with), never overlayfs's own: a copied-up file
//     carries user.overlay.origin (trusted.overlay.* without userxattr),
//     which apply strips from the staged inode before linking it in. A
//     file whose content is the same but whose mode, mtime or attributes
//     changed is an OpChmod carrying them (a directory's, OpChmodDir).
//     POSIX ACLs and file capabilities on a staged file are stripped
//     before it is linked in (an ACL grants other users access the
//     change set, which lists modes, would not show); other security.*
//     and trusted.* attributes (SELinux labels) are out of scope: they
//     are neither staged nor committed;
//   - modification times (Change.Mtime) of files and symlinks, and of
//     staged directories (ChangeSet.DirTimes, set last, children first,
//     best effort: a directory another user owns keeps the commit's
//     time; the workspace root's is not kept, the state lives in it);
//   - hard links: names the agent gave one file whose names are all in
//     the staging area (a new file, or a real one it linked, which
//     overlayfs copies up) form a group committed as one inode: every
//     name is an OpWrite, each after the first (in path order) naming it
//     in Change.Link; they are names of one staged inode, which commit
//     links in. A file that shares its inode with anything else is
//     refused (RefusedHardLink), and so is a write to a real file with
//     several names, which the commit would split;
//   - the workspace folder's own mode (a chmod of "." is an OpChmodDir
//     of "."; the staging area's top takes the folder's mode at Begin),
//     and a file's owner changed by an agent run as root (Change.Owner,
//     on an OpWrite of the staged inode, which has it).
//
// In-process staging (Files, WASI) copies up as overlayfs does:
// mode, user attributes and times, and a copy-up leaves its directory's
// time alone. The copy fallback keeps modes, files' attributes and
// mtimes, symlinks' mtimes and the workspace folder's mode (its copy is
// made as cp -p makes one, and a file whose change time moved is
// folded), but refuses hard links and keeps neither the
// attributes nor the times of directories. The journal and the aside
// log carry all of it, so recovery finishes or undoes it (an undo puts
// back the attributes, mode and mtime of a path that kept its inode);
// a journal written before these fields recovers as it was written.
//
// # Trust
//
// Recovery trusts only journals this user's jukebox wrote: each is bound
// to its transaction id and workspace (real path, device and inode) and
// carries a keyed BLAKE2b MAC under a per-user key kept outside every
// workspace (KeyFile; 0600 in a 0700 directory), and its paths pass the
// staging checks again. Any other journal (an earlier release's, one that
// arrived with a cloned repository, a tampered or copied one) is listed
// by List and Recover and never applied; Discard removes it. A state
// directory reached through a symlink is refused. A transaction's
// tx.json is signed and bound the same way (Begin makes the key when
// there is none): Open refuses, with ErrUntrusted, one whose tx.json does
// not verify, so a planted staging area is never opened, diffed or
// committed; List gives the reason in TxInfo.Untrusted, and Discard
// removes it. Transactions an earlier release left open have an unsigned
// tx.json and are untrusted too: nothing tells them from planted ones.
//
// # SQLite
//
// SQLite databases are staged with the files, by decision: the database
// file (and any -wal/-journal beside it) is copied up on first write and
// swapped in atomically by the commit's rename. Holding a SQLite
// transaction open instead would lock out every other writer for the life
// of the booth and could not cover a child process that opens the database
// itself. The cost is a copy of the database on first write and conflicts
// at whole-file granularity.
//
// # Safety
//
// No staged path escapes the workspace: "..", absolute paths and staging
// through symlinks (in the real tree or staged) that lead out are each
// refused with a *PathError naming the path and wrapping ErrEscape,
// ErrStatePath or ErrInvalidPath, and so is staging (through Files) in
// another workspace's state folder, which no commit changes
// (ErrForeignState). A symlink itself is data: its target is
// recorded whatever it points at, and Commit writes the link with
// symlinkat into a directory opened O_NOFOLLOW, never following it. What
// a change set cannot hold (fifos, sockets, devices, files hard-linked to
// something outside it, paths over PATH_MAX, entries it cannot read) does
// not fail Diff: each is listed in ChangeSet.Refused with its reason and
// never applied, and the rest of the change set is whole; a transaction
// begun Whole (Options.Whole) refuses such a commit instead
// (RefusedError), applying nothing. Change sets print safely
// (termtext.Quote) and flag sensitive paths (Change.Sensitive). A confined child can
// write only the staged workspace, its private /tmp and /dev/shm and the
// WriteLive paths; in copy mode nothing outside the workspace is confined
// or staged.
//
// # Platforms
//
// The booth runs on Linux only: children are staged by overlayfs in an
// unprivileged user+mount namespace, the staging area is in the overlayfs
// upper-dir format (a whiteout is a character device, an opaque directory
// carries an xattr) and commit flushes with syncfs. The code that needs
// the kernel sits in _linux.go files (namespaces, overlayfs, syncfs,
// reflinks) and //go:build unix files (directory descriptors, flock,
// inodes, whiteouts), with stubs in platform_other.go and
// platform_nounix.go, so that this package, and everything that imports
// it, builds on macOS and Windows. There Begin, Open, List and Recover
// return an *UnsupportedError (errors.ErrUnsupported), Probe reports it
// in Capabilities.Unsupported, and callers check Supported before
// offering the booth. Nothing stages there, and nothing pretends to. A
// macOS booth (APFS clonefile and a Seatbelt profile) is not written yet.
package sandbox
