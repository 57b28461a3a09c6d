package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure Begin, Open, List and Recover.
type Options struct {
	// StateRoot holds one directory per transaction. Empty means
	// DefaultStateDir inside the workspace, which keeps staging on the same
	// file system so commit can link and rename instead of copy.
	StateRoot string
	// KeyFile is the per-user key that authenticates commit journals;
	// empty means the default that KeyFile returns, outside every
	// workspace. Tests point it elsewhere.
	KeyFile string
	// Observer, when set, hears every begin, change, commit and rollback, so
	// the engine can write tape frames without sandbox knowing about tapes.
	Observer func(Event)
	// Resolvers let Open take up participants a failed decision left
	// prepared (held.go): their work commits or rolls back with the files.
	Resolvers []Resolver
	// Whole makes a commit all or nothing over what was staged: a change
	// set that refuses an entry (a fifo, another workspace's state, ...)
	// fails the commit with a *RefusedError, nothing applied, the
	// transaction left open. Without it the rest is committed and the
	// refusals listed (a booth run's agent wrote them itself).
	Whole bool
}

// EventKind names what an Event reports.
type EventKind string

// Event kinds, in the order a committing transaction emits them.
const (
	EventBegin     EventKind = "tx.begin"
	EventSavepoint EventKind = "tx.savepoint"
	EventChange    EventKind = "tx.change" // one per change, before it is applied
	EventCommit    EventKind = "tx.commit"
	EventRollback  EventKind = "tx.rollback"
)

// Event is what the Observer hears. Change is set for EventChange only and
// its Open method reads the staged content while the callback runs.
type Event struct {
	Kind   EventKind
	TxID   string
	Name   string // savepoint name for EventSavepoint
	Change *Change
}

// workspace is the resolved real tree and where its booth state lives.
type workspace struct {
	root      string // absolute, symlinks evaluated
	stateRoot string // absolute
	stateRel  string // stateRoot relative to root, "" when outside it
}

func newWorkspace(dir string, opts Options) (*workspace, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("sandbox: workspace: %w", err)
	}
	w := &workspace{root: root, stateRoot: filepath.Join(root, filepath.FromSlash(DefaultStateDir))}
	if opts.StateRoot != "" {
		if w.stateRoot, err = filepath.Abs(opts.StateRoot); err != nil {
			return nil, fmt.Errorf("sandbox: state root: %w", err)
		}
	}
	if rel, err := filepath.Rel(root, w.stateRoot); err == nil && !strings.HasPrefix(rel, "..") {
		w.stateRel = filepath.ToSlash(rel)
	}
	if err := w.checkStateRoot(); err != nil {
		return nil, err
	}
	return w, nil
}

// txMeta is tx.json's body, written at Begin and on each savepoint,
// signed and bound to the workspace (txauth.go).
type txMeta struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	// Dev and Ino bind it to the workspace directory, as a journal is.
	Dev        uint64    `json:"dev,omitempty"`
	Ino        uint64    `json:"ino,omitempty"`
	Created    time.Time `json:"created"`
	BeginCtime int64     `json:"begin_ctime_ns"`
	Savepoints []string  `json:"savepoints,omitempty"`
	// Roots are the folders outside the workspace staged with it
	// (StageRoot), each a sub-transaction in roots/N/.
	Roots []rootRef `json:"roots,omitempty"`
	// RootMode is the workspace folder's mode at Begin (the staging
	// area's top takes it, so the agent sees it), with fs.ModeDir set so
	// that it is never 0; 0 in a transaction an earlier release began.
	// Diff compares the top with it to find a chmod of the folder itself.
	RootMode fs.FileMode `json:"root_mode,omitempty"`
	// Deferred is the caller's, kept for whoever commits (Tx.Defer).
	Deferred json.RawMessage `json:"deferred,omitempty"`
	// Live are the participants whose work lives in the process that
	// joined them (live.go).
	Live []LostWork `json:"live,omitempty"`
}

// Tx is one booth transaction over a workspace: its id and state
// directory, its participants (Join, StageRoot), savepoints, Diff, Commit
// and Rollback. The staged view it holds is read and written through
// Files; the runners (Exec, Shell, RunWasm) are functions that take it or
// its Files. Its methods are safe for use by several goroutines.
type Tx struct {
	mu sync.Mutex
	// running is held by the command Exec runs: one at a time, since
	// the overlay run holds mu throughout (a second one, the other side
	// of a shell's pipeline, waited for ever on a command that waited
	// on it).
	running sync.Mutex
	ws      *workspace
	dir     string // this transaction's state directory
	upper   string // the staging area, in overlayfs upper-dir format
	meta    txMeta
	opts    Options
	key     []byte // the booth key, which signs tx.json
	base    map[string]fingerprint
	parts   []Participant
	live    []Participant // the participants of meta.Live this process joined
	closed  bool
	begin   *beginNames // the workspace's names at Begin (conflicts)
	// baseLog is base.jsonl, open from its first line until the
	// transaction is decided (closeBase).
	baseLog *os.File
	// owner holds the transaction's owner lock (owner.go) until it is
	// decided; nil for a staged root's.
	owner *os.File
	// pinned are the folders from the workspace down to the staging area
	// as Begin or Open found them (checkState).
	pinned []pinnedDir
	// kept are the workspace paths a commit may not change (Keep).
	kept []string
	// asCaller: a commit writes over no file the process may not write (AsCaller).
	asCaller bool
}

// pinnedDir is a state folder and what stood there.
type pinnedDir struct {
	path string
	fi   fs.FileInfo
}

// pinState notes the folders from the workspace's top down to the
// staging area (.jukebox, its booth folder, the transaction's, upper).
func (tx *Tx) pinState() error {
	tx.pinned = nil
	rel, err := filepath.Rel(tx.ws.root, tx.upper)
	if err != nil {
		return err
	}
	p := tx.ws.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		tx.pinned = append(tx.pinned, pinnedDir{p, fi})
	}
	return nil
}

// checkState refuses a commit whose state folders are no longer those
// Begin made: an agent of the same user that replaced the staging area,
// or the transaction's folder, by a link had the commit link files from
// where it pointed into the workspace, and write the journal there.
func (tx *Tx) checkState() error {
	for _, d := range tx.pinned {
		fi, err := os.Lstat(d.path)
		if err != nil || !fi.IsDir() || !os.SameFile(fi, d.fi) {
			return fmt.Errorf("%w: %s was replaced since the transaction began (not committed)", ErrStateReplaced, d.path)
		}
	}
	return nil
}

// Begin starts a transaction over the workspace directory. It touches no
// workspace file and costs the same whatever the workspace's size.
func Begin(dir string, opts Options) (*Tx, error) {
	tx, err := begin(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := tx.takeOwner(); err != nil {
		discard(tx.ws, tx.dir)
		return nil, err
	}
	return tx, nil
}

// begin is Begin without the owner lock: a staged root's transaction,
// which its parent's owns.
func begin(dir string, opts Options) (*Tx, error) {
	w, err := newWorkspace(dir, opts)
	if err != nil {
		return nil, err
	}
	id, err := newTxID()
	if err != nil {
		return nil, err
	}
	key, err := loadKey(opts, w, true)
	if err != nil {
		return nil, err
	}
	tx := &Tx{ws: w, opts: opts, key: key, base: map[string]fingerprint{}}
	tx.setDir(filepath.Join(w.stateRoot, id))
	if err := mkdirState(tx.upper); err != nil {
		return nil, fmt.Errorf("sandbox: begin: %w", err)
	}
	ctime, err := touchMarker(filepath.Join(tx.dir, "begin"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: begin: %w", err)
	}
	tx.meta = txMeta{ID: id, Workspace: w.root, Created: time.Now().UTC(), BeginCtime: ctime}
	if tx.meta.RootMode, err = takeRootMode(w.root, tx.upper); err != nil {
		return nil, fmt.Errorf("sandbox: begin: %w", err)
	}
	if err := tx.writeMeta(); err != nil {
		return nil, fmt.Errorf("sandbox: begin: %w", err)
	}
	tx.readBeginNames()
	if err := tx.pinState(); err != nil {
		return nil, fmt.Errorf("sandbox: begin: %w", err)
	}
	tx.emit(Event{Kind: EventBegin})
	return tx, nil
}

// takeRootMode gives the staging area's top upper the workspace folder's
// mode and returns it (with fs.ModeDir). The owner keeps rwx on upper,
// whatever the folder's mode, so that the booth can stage in it.
func takeRootMode(root, upper string) (fs.FileMode, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return 0, err
	}
	perm := modeBits(fi.Mode()) | 0o700
	if err := os.Chmod(upper, perm); err != nil {
		return 0, err
	}
	return fs.ModeDir | perm, nil
}

// Open reopens a transaction left open (for example with --keep) by id.
// One whose tx.json this user's jukebox did not write for this workspace
// is refused with ErrUntrusted.
func Open(dir, id string, opts Options) (*Tx, error) {
	tx, err := open(dir, id, opts)
	if err != nil {
		return nil, err
	}
	if err := tx.takeOwner(); err != nil {
		return nil, err
	}
	return tx, nil
}

// open is Open without the owner lock: a staged root's transaction, which
// its parent's owns.
func open(dir, id string, opts Options) (*Tx, error) {
	w, err := newWorkspace(dir, opts)
	if err != nil {
		return nil, err
	}
	if !validTxName(id) {
		return nil, fmt.Errorf("%w: %q", ErrNoTx, id)
	}
	tx := &Tx{ws: w, opts: opts}
	tx.setDir(filepath.Join(w.stateRoot, id))
	keys := &keyRing{opts: opts, w: w}
	m, untrusted, err := readMeta(w, tx.dir, keys)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %q", ErrNoTx, id)
	case err != nil:
		return nil, fmt.Errorf("sandbox: open %s: %w", id, err)
	case untrusted != "":
		return nil, fmt.Errorf("%w: %s: %s", ErrUntrusted, id, untrusted)
	}
	tx.meta, tx.key = m, keys.key
	if _, err := os.Lstat(filepath.Join(tx.dir, journalName)); err == nil {
		return nil, fmt.Errorf("sandbox: open %s: it holds a commit journal (an interrupted commit, or one recovery will not apply): jukebox booth status says which", id)
	}
	if tx.base, err = loadBase(tx.dir); err != nil {
		return nil, err
	}
	if tx.begin, err = loadBeginNames(tx.dir); err != nil {
		return nil, err
	}
	if err := tx.pinState(); err != nil {
		return nil, fmt.Errorf("sandbox: open %s: %w", id, err)
	}
	if err := tx.openRoots(); err != nil {
		return nil, err
	}
	if err := tx.openHeld(keys); err != nil {
		return nil, err
	}
	return tx, nil
}

// TxInfo describes a transaction found in a workspace's state directory.
type TxInfo struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Committing is true when a commit journal exists: Recover will finish
	// or undo it, unless it is Untrusted.
	Committing bool `json:"committing"`
	// Journal is the state of an authenticated commit journal: "prepare",
	// "commit", "undo" or "applied"; "" when there is none or it is
	// untrusted.
	Journal string `json:"journal,omitempty"`
	// Untrusted says why this transaction is never opened, committed or
	// recovered: its journal, or (without one) its tx.json, is
	// unauthenticated (an earlier release's, or planted with a cloned
	// repository), has a bad MAC, or is bound to another workspace or
	// transaction. Discard removes it.
	Untrusted string `json:"untrusted,omitempty"`
	// Running says a process still uses the transaction (the run that
	// began it, or a booth command): Open refuses it (ErrInUse).
	Running bool `json:"running,omitempty"`
}

// List returns the transactions kept in the workspace, oldest first.
func List(dir string, opts Options) ([]TxInfo, error) {
	w, err := newWorkspace(dir, opts)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(w.stateRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("sandbox: list: %w", err)
	}
	var out []TxInfo
	keys := &keyRing{opts: opts, w: w}
	for _, e := range ents {
		if !e.IsDir() || !validTxName(e.Name()) {
			continue
		}
		dir := filepath.Join(w.stateRoot, e.Name())
		m, muntrusted, merr := readMeta(w, dir, keys)
		j, found, untrusted, jerr := readJournal(w, dir, keys)
		if jerr != nil {
			untrusted = "cannot check its journal: " + jerr.Error()
		}
		if merr != nil && !found {
			continue
		}
		if !found {
			untrusted = muntrusted // a trusted journal vouches for the rest
		}
		info := TxInfo{ID: e.Name(), Created: m.Created, Committing: found, Untrusted: untrusted, Running: inUse(dir)}
		if found && untrusted == "" {
			info.Journal = j.State
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Defer keeps data with the transaction for whoever commits it later:
// work the caller puts off until the commit (the MCP calls the booth
// held, when a run ends with its transaction kept). It lives in the
// transaction's authenticated record (tx.json, under the booth key), and a
// transaction whose record does not verify is never opened, so what
// Deferred returns was written by this jukebox, never planted.
func (tx *Tx) Defer(data json.RawMessage) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	tx.meta.Deferred = data
	return tx.writeMeta()
}

// Flush makes what is staged durable, in the transaction and in each
// folder staged with it: for a transaction left open when its run ends,
// which a later commit may apply after a crash. Staged writes are not
// synced as they happen, nor when a booth's overlay is unmounted (it is
// volatile); Commit flushes before its decision record by itself.
func (tx *Tx) Flush() error {
	for _, t := range append([]*Tx{tx}, tx.Roots()...) {
		if err := syncPath(t.upper); err != nil {
			return fmt.Errorf("sandbox: flush the staging area %s: %w", t.upper, err)
		}
	}
	return nil
}

// Deferred is what Defer kept, nil when nothing.
func (tx *Tx) Deferred() json.RawMessage {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.meta.Deferred
}

// ID returns the transaction id, unique and sortable by start time.
func (tx *Tx) ID() string { return tx.meta.ID }

// Workspace returns the absolute path of the real workspace.
func (tx *Tx) Workspace() string { return tx.ws.root }

// StateDir returns this transaction's state directory.
func (tx *Tx) StateDir() string { return tx.dir }

func (tx *Tx) setDir(dir string) {
	tx.dir = dir
	tx.upper = filepath.Join(dir, "upper")
}

func (tx *Tx) emit(ev Event) {
	if tx.opts.Observer != nil {
		ev.TxID = tx.meta.ID
		tx.opts.Observer(ev)
	}
}

func (tx *Tx) checkOpen() error {
	if tx.closed {
		return ErrClosed
	}
	return nil
}

// newTxID returns "tx-" + 16 hex digits of time + 8 random hex digits.
func newTxID() (string, error) {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("sandbox: tx id: %w", err)
	}
	return fmt.Sprintf("tx-%016x%s", time.Now().UnixNano(), hex.EncodeToString(r[:])), nil
}

// writeJSONAtomic writes v to name as writeFileAtomic does.
func writeJSONAtomic(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(name, append(data, '\n'))
}

// writeSynced creates name (0600, with the extra open flags) and writes
// data to it, synced and closed, for a caller to rename or link into place.
func writeSynced(name string, data []byte, flags int) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|flags, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readJSON(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
