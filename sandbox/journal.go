package sandbox

import (
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// journalName is the decision record inside a transaction's directory.
// It is JSON, replaced atomically (write, fsync, rename, fsync dir):
//
//	state "prepare": participants are being prepared; no decision yet.
//	                 Recover rolls the participants back and drops the tx.
//	state "commit":  the decision. Changes are being applied, each
//	                 original moved aside into the transaction's
//	                 directory first. Recover applies the rest again
//	                 (every step is idempotent); if a step fails for a
//	                 reason other than a crash, it undoes them instead.
//	state "undo":    applying failed: the originals are being put back.
//	                 Recover finishes that, rolls the participants back,
//	                 and leaves the transaction open (dropped if it had
//	                 participants, whose work is gone).
//	state "applied": every change is in place and synced; Recover
//	                 commits the participants and removes the tx.
//
// Recovery acts only on journals this user's jukebox wrote for this
// transaction in this workspace: the body is bound to the transaction id
// and the workspace (real path, device and inode) and authenticated with
// a keyed BLAKE2b-256 MAC under the booth key (see KeyFile), and every
// path in it passes the staging checks again.
const journalName = "journal.json"

// journalFormat names the authenticated journal format; a journal
// without it was written by an earlier release (or planted).
const journalFormat = "jukebox-booth-journal/2"

// Journal states.
const (
	statePrepare = "prepare"
	stateCommit  = "commit"
	stateUndo    = "undo"
	stateApplied = "applied"
)

// journal is the decision record.
type journal struct {
	TxID string `json:"tx"`
	// Workspace binds the journal to the real workspace: its absolute
	// real path, and the device and inode of that directory.
	Workspace    string       `json:"workspace"`
	Dev          uint64       `json:"dev"`
	Ino          uint64       `json:"ino"`
	State        string       `json:"state"`
	Participants []partRecord `json:"participants,omitempty"`
	Changes      []Change     `json:"changes,omitempty"`
	// Before is the real side of each change's path just before the
	// decision (same order as Changes), to check that an undo restored it.
	Before []fingerprint `json:"before,omitempty"`
	// DirTimes are set after the changes (absent from journals an
	// earlier release wrote, which then set none).
	DirTimes []DirTime `json:"dir_times,omitempty"`
	// Error is why applying failed, in state "undo".
	Error string `json:"error,omitempty"`
}

// journalFile is what journal.json holds: the body as written, and its MAC.
type journalFile struct {
	Format string          `json:"format"`
	MAC    string          `json:"mac"`
	Body   json.RawMessage `json:"body"`
}

// journalMAC is the keyed BLAKE2b-256 of the body, under the format name.
func journalMAC(key, body []byte) []byte { return bodyMAC(journalFormat, key, body) }

// writeJournal binds j to w and its directory's transaction, signs it
// with key and replaces the journal atomically.
func writeJournal(w *workspace, dir string, key []byte, j journal) error {
	j.TxID = filepath.Base(dir)
	j.Workspace = w.root
	fi, err := os.Stat(w.root)
	if err != nil {
		return fmt.Errorf("sandbox: write journal: %w", err)
	}
	j.Dev, j.Ino = devIno(fi)
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("sandbox: write journal: %w", err)
	}
	data, err := json.Marshal(journalFile{Format: journalFormat, MAC: hex.EncodeToString(journalMAC(key, body)), Body: body})
	if err == nil {
		err = fail("write-journal-" + string(j.State))
	}
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, journalName), append(data, '\n'))
	}
	if err != nil {
		return fmt.Errorf("sandbox: write journal: %w", err)
	}
	return nil
}

// keyRing loads the booth key once, only when a journal needs it.
type keyRing struct {
	opts   Options
	w      *workspace
	loaded bool
	key    []byte
	err    error
}

func (k *keyRing) get() ([]byte, error) {
	if !k.loaded {
		k.key, k.err = loadKey(k.opts, k.w, false)
		k.loaded = true
	}
	return k.key, k.err
}

// readJournal reads and checks dir's journal. found is false when there
// is none. untrusted, when set, says why the journal must not be
// applied; err is for failures to read it at all.
func readJournal(w *workspace, dir string, keys *keyRing) (j journal, found bool, untrusted string, err error) {
	return readJournalFile(w, dir, journalName, keys)
}

// readJournalFile reads the authenticated record name in dir, as
// readJournal does the journal.
func readJournalFile(w *workspace, dir, name string, keys *keyRing) (j journal, found bool, untrusted string, err error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return j, false, "", nil
	}
	if err != nil {
		return j, false, "", fmt.Errorf("sandbox: read journal in %s: %w", dir, err)
	}
	var f journalFile
	if err := json.Unmarshal(data, &f); err != nil {
		return j, true, "unreadable journal (" + err.Error() + ")", nil
	}
	switch {
	case f.Format == "":
		return j, true, "unauthenticated journal (earlier release or planted)", nil
	case f.Format != journalFormat:
		return j, true, fmt.Sprintf("journal of an unknown format %q", f.Format), nil
	}
	key, err := keys.get()
	if errors.Is(err, errNoKey) {
		return j, true, "journal with no booth key to check it against (planted, or the key was removed)", nil
	}
	if err != nil {
		return j, true, "", err
	}
	mac, herr := hex.DecodeString(f.MAC)
	if herr != nil || subtle.ConstantTimeCompare(mac, journalMAC(key, f.Body)) != 1 {
		return j, true, "journal with a bad MAC (tampered, or written under another key)", nil
	}
	if err := json.Unmarshal(f.Body, &j); err != nil {
		return j, true, "unreadable journal (" + err.Error() + ")", nil
	}
	return j, true, w.checkJournal(dir, j), nil
}

// checkJournal returns why an authenticated journal still must not be
// applied here, or "".
func (w *workspace) checkJournal(dir string, j journal) string {
	if j.TxID != filepath.Base(dir) {
		return fmt.Sprintf("journal written for transaction %s, not %s", j.TxID, filepath.Base(dir))
	}
	fi, err := os.Stat(w.root)
	if err != nil {
		return "cannot check the journal's workspace: " + err.Error()
	}
	if dev, ino := devIno(fi); j.Workspace != w.root || j.Dev != dev || j.Ino != ino {
		return fmt.Sprintf("journal written for another workspace (%s)", j.Workspace)
	}
	switch j.State {
	case statePrepare, stateCommit, stateUndo, stateApplied, stateVote:
	default:
		return fmt.Sprintf("journal in an unknown state %q", j.State)
	}
	if len(j.Before) != 0 && len(j.Before) != len(j.Changes) {
		return "journal with a malformed change list"
	}
	writes := map[string]bool{}
	for i, c := range j.Changes {
		if err := w.checkJournalChange(c, writes); err != nil {
			return fmt.Sprintf("journal with an unsafe change: %v", err)
		}
		if len(j.Before) != 0 && j.Before[i].Path != c.Path {
			return "journal with a malformed change list"
		}
		if c.Op == OpWrite && c.Link == "" {
			writes[c.Path] = true
		}
	}
	for _, d := range j.DirTimes {
		if rel, err := w.cleanFile("recover", d.Path); err != nil || rel != d.Path {
			return fmt.Sprintf("journal with an unsafe directory time: %q", d.Path)
		}
	}
	return ""
}

// checkJournalChange applies the staging checks to one journal entry:
// a clean relative path, not the root (but for a chmod of it), nothing
// outside the workspace or inside the state directory, and an operation
// this release knows; a hard link only to a write before it (in writes),
// and extended attributes only in the user namespace, never overlayfs's.
func (w *workspace) checkJournalChange(c Change, writes map[string]bool) error {
	clean := w.cleanFile
	if c.Op == OpChmodDir {
		clean = w.cleanRel // the workspace folder's own mode
	}
	rel, err := clean("recover", c.Path)
	if err != nil {
		return err
	}
	if rel != c.Path {
		return pathErr("recover", c.Path, ErrInvalidPath)
	}
	switch c.Op {
	case OpWrite, OpSymlink, OpMkdir, OpReplaceDir, OpDelete, OpChmod, OpChmodDir:
	default:
		return pathErr("recover "+string(c.Op), c.Path, ErrInvalidPath)
	}
	if strings.IndexByte(c.Target, 0) >= 0 {
		return pathErr("recover", c.Path, ErrInvalidPath)
	}
	if c.Link != "" && (c.Op != OpWrite || !writes[c.Link]) {
		return pathErr("recover link", c.Path, ErrInvalidPath)
	}
	for name := range c.Xattrs {
		if !strings.HasPrefix(name, "user.") || isOverlayXattr(name) || strings.IndexByte(name, 0) >= 0 {
			return pathErr("recover xattr", c.Path, ErrInvalidPath)
		}
	}
	return nil
}

// removeJournal drops the journal, so that the transaction is open again.
func removeJournal(dir string) error {
	if err := os.Remove(filepath.Join(dir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(dir)
}

// failpoint, when set (by tests), is called at every step of a commit and
// of recovery. ErrCrash stops the work right there, as a crash would,
// leaving the state on disk for Recover; any other error is a failure of
// that step (as EACCES or ENOSPC would be), which undoes the commit.
var failpoint func(step string) error

func fail(step string) error {
	if failpoint == nil {
		return nil
	}
	return failpoint(step)
}

// checkStateRoot refuses a state directory reached through a symlink: a
// repository could carry .jukebox -> elsewhere and have the booth keep
// (and recover) its state there. Inside the workspace every component
// from the workspace down must be a real directory; a state root outside
// it must not itself be a symlink. Missing components are fine.
func (w *workspace) checkStateRoot() error {
	check := func(p string) (bool, error) {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("sandbox: state directory: %w", err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return false, fmt.Errorf("%w: the booth's state directory %s is reached through the symlink %s: refused (remove the symlink)", ErrEscape, w.stateRoot, p)
		case !fi.IsDir():
			return false, fmt.Errorf("%w: %s is not a directory: the booth keeps its state there", ErrStatePath, p)
		}
		return true, nil
	}
	if w.stateRel == "" {
		_, err := check(w.stateRoot)
		return err
	}
	p := w.root
	for _, part := range splitPath(w.stateRel) {
		p = filepath.Join(p, part)
		if ok, err := check(p); !ok {
			return err
		}
	}
	return nil
}

// stateLock serialises commits and recovery in one state root. The lock
// file is removed on release, so nothing is left behind in the workspace.
type stateLock struct {
	f    *os.File
	w    *workspace
	name string
}

func lockState(w *workspace) (*stateLock, error) {
	if err := w.checkStateRoot(); err != nil {
		return nil, err
	}
	name := filepath.Join(w.stateRoot, ".lock")
	for tries := 0; ; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("sandbox: lock %s: gave up", name)
		}
		if err := mkdirState(w.stateRoot); err != nil {
			return nil, fmt.Errorf("sandbox: lock: %w", err)
		}
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the state root was pruned meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: lock: %w", err)
		}
		if err := lockFile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("sandbox: lock: %w", err)
		}
		// The holder before us removed the file when it released it: a
		// lock on a removed file locks nothing, so take the new one.
		fi, ferr := f.Stat()
		li, lerr := os.Lstat(name)
		if ferr == nil && lerr == nil && os.SameFile(fi, li) {
			return &stateLock{f: f, w: w, name: name}, nil
		}
		unlockFile(f)
		f.Close()
	}
}

// release removes the lock file and the state folders left empty, then
// unlocks.
func (l *stateLock) release() {
	os.Remove(l.name)
	pruneState(l.w)
	unlockFile(l.f)
	l.f.Close()
}

// discard removes a transaction directory: first renamed aside in one
// atomic step, so a crash never leaves half a transaction that looks open.
func discard(w *workspace, dir string) error {
	trash := filepath.Join(w.stateRoot, ".trash-"+filepath.Base(dir))
	if err := os.Rename(dir, trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sandbox: discard: %w", err)
	}
	if err := removeAll(trash); err != nil {
		return fmt.Errorf("sandbox: discard: %w", err)
	}
	removeCopies(w, filepath.Base(dir)) // a copy run's folder left by a killed jukebox
	pruneState(w)
	return nil
}

// pruneState removes the empty state folders inside the workspace when the
// last transaction is gone, so that nothing is left behind. It never goes
// above the workspace root and removes only empty folders.
func pruneState(w *workspace) {
	if w.stateRel == "" {
		return
	}
	for dir := w.stateRoot; dir != w.root && strings.HasPrefix(dir, w.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}

// mkdirState makes dir, a folder under the state root, and its parents,
// again when the end of another transaction pruned one of them, empty,
// meanwhile (pruneState: between making .jukebox/booth and the
// transaction's folder in it, a Begin beside a Rollback found its
// parent gone). Once dir is made its parents are not empty, and stay.
func mkdirState(dir string) error {
	for tries := 0; ; tries++ {
		err := os.MkdirAll(dir, 0o700)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || tries >= 1000 {
			return err
		}
	}
}

// Discard removes the state of transaction id without touching the
// workspace: for a transaction whose journal recovery will not apply
// (unauthenticated, tampered, or written for another workspace or
// transaction), or one merely left open (its participants, if any, are
// not told). The journal of an interrupted commit that this jukebox
// wrote is refused: Recover finishes or undoes that one, and the
// originals it moved aside live in the transaction's directory.
func Discard(dir, id string, opts Options) error {
	w, err := newWorkspace(dir, opts)
	if err != nil {
		return err
	}
	if !validTxName(id) {
		return fmt.Errorf("%w: %q", ErrNoTx, id)
	}
	txDir := filepath.Join(w.stateRoot, id)
	if fi, err := os.Lstat(txDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %q", ErrNoTx, id)
	}
	lock, err := lockState(w)
	if err != nil {
		return err
	}
	defer lock.release()
	if inUse(txDir) {
		return fmt.Errorf("sandbox: discard %s: %w", id, ErrInUse)
	}
	_, found, untrusted, err := readJournal(w, txDir, &keyRing{opts: opts, w: w})
	if err != nil {
		return err
	}
	if found && untrusted == "" {
		return fmt.Errorf("sandbox: discard %s: it holds an interrupted commit this jukebox journaled: recover it instead (jukebox booth recover)", id)
	}
	return discard(w, txDir)
}

// validTxName reports whether id can name a transaction directory.
func validTxName(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/\\\x00") && !strings.HasPrefix(id, ".")
}

// writeFileAtomic writes data to name through a synced temporary file
// and a rename, then syncs the directory, so readers see the old or new
// whole.
func writeFileAtomic(name string, data []byte) error {
	tmp := name + ".tmp"
	err := writeSynced(tmp, data, os.O_TRUNC|oNoFollow)
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(name))
}
