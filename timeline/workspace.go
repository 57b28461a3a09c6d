package timeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Where a path of a rebuilt workspace comes from (WorkspaceFile.Source).
const (
	SourceTape    = "tape"    // the snapshot or a change on the tape
	SourceFolder  = "folder"  // the recorded folder, as it is now
	SourceMissing = "missing" // neither: the content cannot be rebuilt
)

// WorkspaceFile is one path of the workspace at a frame.
type WorkspaceFile struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "file", "dir" or "symlink"
	Mode   uint32 `json:"mode,omitempty"`
	Target string `json:"target,omitempty"`
	Source string `json:"source"`
	// Changed: the agent had changed the path by the frame (a step
	// record or the change set names it); Op is that change and Frame
	// its frame, -1 for a path as the run found it.
	Changed bool           `json:"changed,omitempty"`
	Op      tapefmt.FileOp `json:"op,omitempty"`
	Frame   int            `json:"frame"`
	// Why says why a missing file's content cannot be rebuilt.
	Why  string       `json:"why,omitempty"`
	body tapefmt.Hash // the content on the tape, when Source is tape
	abs  string       // the file in the recorded folder, when Source is folder
	// start is the path as the run found it, for a diff; startUnknown
	// says the tape cannot tell (StartContent).
	start        *WorkspaceFile
	startUnknown bool
}

// Workspace is the booth's workspace as it stood at one frame: the run's
// start (the tape's ws.snapshot, else the recorded folder as it is now)
// with the step records up to the frame, or, on a tape without step
// records, the change set once the frame is past it (FORMAT.md, 10.3).
type Workspace struct {
	Frame    int             `json:"frame"`
	Folder   string          `json:"folder"`   // the recorded workspace
	Snapshot bool            `json:"snapshot"` // the start is on the tape
	Steps    bool            `json:"steps"`    // the tape has step records
	Files    []WorkspaceFile `json:"files"`    // in path order
	// Gone are the paths the agent had deleted by the frame (Op
	// delete, Frame the record's).
	Gone []WorkspaceFile `json:"gone,omitempty"`
	// FolderGone: without a snapshot, the recorded folder is not there,
	// so only what the agent wrote is known.
	FolderGone bool `json:"folder_gone,omitempty"`
	tape       *tapefmt.Tape
}

// Missing lists the files whose content cannot be rebuilt.
func (w *Workspace) Missing() []WorkspaceFile {
	var out []WorkspaceFile
	for _, f := range w.Files {
		if f.Source == SourceMissing {
			out = append(out, f)
		}
	}
	return out
}

// Changed lists the paths the agent had changed by the frame, deleted
// ones as Op delete with no file.
func (w *Workspace) Changed() []WorkspaceFile {
	var out []WorkspaceFile
	for _, f := range w.Files {
		if f.Changed {
			out = append(out, f)
		}
	}
	out = append(out, w.Gone...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ErrStartUnknown is StartContent's error for a path the tape cannot say
// how the run found: it has no snapshot, and the run committed a change
// to the path, so the recorded folder holds that instead.
var ErrStartUnknown = errors.New("its start is not known: no snapshot on the tape, and the folder holds what the run committed")

// ErrNoBooth is the error of WorkspaceAt on a tape of a run outside the
// booth: it recorded no workspace.
var ErrNoBooth = errors.New("the tape holds no booth run (no tx.begin with a workspace): record with --booth")

// WorkspaceAt rebuilds the workspace as it stood at frame i.
func (tl *Timeline) WorkspaceAt(i int) (*Workspace, error) { return WorkspaceOf(tl.t, tl.path, i) }

// WorkspaceOf rebuilds the workspace of t's booth run at frame i; name
// is the tape's path, left out of a workspace it lies in.
func WorkspaceOf(t *tapefmt.Tape, name string, i int) (*Workspace, error) {
	if i < 0 || i >= t.Len() {
		return nil, fmt.Errorf("frame %d: the tape has frames 0 to %d", i, t.Len()-1)
	}
	sc, err := scanWorkspace(t, name, i)
	if err != nil {
		return nil, err
	}
	w := &Workspace{Frame: i, Folder: sc.folder, Snapshot: sc.snapshot != nil, Steps: sc.steps, tape: t}
	start := sc.snapshot
	if start == nil {
		start = folderStart(sc.folder, sc.tapePaths)
		if _, err := os.Stat(sc.folder); err != nil {
			w.FolderGone = true
		}
	}
	files := map[string]*WorkspaceFile{}
	for p, f := range start {
		c := *f
		c.start = f
		files[p] = &c
	}
	for _, p := range sortedKeys(sc.latest) {
		if err := apply(files, start, sc.latest[p], w); err != nil {
			return nil, err
		}
	}
	const committedWhy = "the run committed a change to it, so the folder holds that, not this frame's; record with --snapshot"
	for _, f := range files {
		if _, ok := sc.committed[f.Path]; ok && !w.Snapshot {
			if f.Source == SourceFolder {
				f.Source, f.Why = SourceMissing, committedWhy
			}
			// The folder holds what the run committed there, not what
			// the run found: no start to compare with.
			f.start, f.startUnknown = nil, true
		}
		w.Files = append(w.Files, *f)
	}
	if !w.Snapshot {
		for p, op := range sc.committed {
			if l, ok := sc.latest[p]; op == tapefmt.OpDelete && files[p] == nil && (!ok || l.fc.Op == tapefmt.OpRestore) {
				w.Files = append(w.Files, WorkspaceFile{Path: p, Source: SourceMissing, Frame: -1, Why: committedWhy})
			}
		}
	}
	sort.Slice(w.Files, func(a, b int) bool { return w.Files[a].Path < w.Files[b].Path })
	if err := underLink(w.Files); err != nil {
		return nil, err
	}
	return w, nil
}

// change is the latest record of a path at the frame.
type change struct {
	fc    *tapefmt.FileChange
	frame int
}

// wsScan is what one pass over a tape's booth frames finds.
type wsScan struct {
	folder    string
	tx        string
	snapshot  startFiles
	steps     bool
	latest    map[string]change         // path -> its latest step record (or change) at the frame
	committed map[string]tapefmt.FileOp // paths of a change set that was committed
	tapePaths []string
}

type startFiles map[string]*WorkspaceFile

func (s startFiles) has() bool { return s != nil }

// scanWorkspace reads the booth's frames: the first tx.begin with a
// workspace, its snapshot, and its file changes up to frame i.
func scanWorkspace(t *tapefmt.Tape, name string, i int) (*wsScan, error) {
	sc := &wsScan{latest: map[string]change{}, committed: map[string]tapefmt.FileOp{}}
	var steps, set []change
	var committed bool
	for f, err := range t.Frames(tapefmt.KindTxBegin, tapefmt.KindSnapshot, tapefmt.KindFileChange, tapefmt.KindTxCommit) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		n := int(f.Seq)
		switch p := p.(type) {
		case *tapefmt.TxBegin:
			if sc.tx == "" && p.Workspace != "" {
				sc.tx, sc.folder = p.Tx, p.Workspace
			}
		case *tapefmt.Snapshot:
			if p.Tx != sc.tx {
				continue
			}
			if sc.snapshot == nil {
				sc.snapshot = startFiles{}
			}
			for _, e := range p.Files {
				if !safeRel(e.Path) {
					return nil, fmt.Errorf("frame %d: ws.snapshot path %q leaves the workspace (absolute, .. or not clean)", n, e.Path)
				}
				sc.snapshot[e.Path] = &WorkspaceFile{Path: e.Path, Type: e.Type, Mode: e.Mode, Target: e.Target,
					Source: sourceOf(e.Type, e.Body), body: e.Body, Frame: -1, Why: whyMissing(e.Type, e.Body)}
			}
		case *tapefmt.FileChange:
			if p.Tx != sc.tx || sc.tx == "" || p.Root != "" || p.Op == tapefmt.OpRefused {
				continue
			}
			if p.IsStep() {
				sc.steps = true
				if n <= i {
					steps = append(steps, change{p, n})
				}
			} else {
				set = append(set, change{p, n})
			}
		case *tapefmt.TxCommit:
			committed = committed || p.Tx == sc.tx
		}
	}
	if sc.tx == "" {
		return nil, ErrNoBooth
	}
	use := steps
	if !sc.steps {
		for _, c := range set {
			if c.frame <= i {
				use = append(use, c)
			}
		}
	}
	for _, c := range use {
		sc.latest[c.fc.Path] = c
	}
	if committed {
		for _, c := range set {
			sc.committed[c.fc.Path] = c.fc.Op
		}
	}
	if name != "" && !IsRemote(name) {
		if abs, err := filepath.Abs(name); err == nil {
			sc.tapePaths = append(sc.tapePaths, abs)
		}
	}
	return sc, nil
}

func sourceOf(typ string, body tapefmt.Hash) string {
	if typ == "file" && body.IsZero() {
		return SourceMissing
	}
	return SourceTape
}

func whyMissing(typ string, body tapefmt.Hash) string {
	if typ == "file" && body.IsZero() {
		return "its content is not on the tape (too large or unreadable when recorded)"
	}
	return ""
}

// folderStart reads the recorded folder as it is now, for a tape
// without a snapshot: nil when it is gone.
func folderStart(root string, skip []string) startFiles {
	out := startFiles{}
	filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil || abs == root {
			return nil
		}
		rel, _ := filepath.Rel(root, abs)
		rel = filepath.ToSlash(rel)
		if rel == ".jukebox" || strings.HasPrefix(rel, ".jukebox/") {
			return filepath.SkipDir
		}
		for _, p := range skip {
			if strings.HasPrefix(abs, p) {
				return nil
			}
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		e, ok := tapefmt.EntryOf(rel, fi)
		if !ok {
			return nil
		}
		f := &WorkspaceFile{Path: rel, Type: e.Type, Mode: e.Mode, Source: SourceFolder, abs: abs, Frame: -1}
		if e.Type == "symlink" {
			f.Target, _ = os.Readlink(abs)
		}
		out[rel] = f
		return nil
	})
	return out
}

// apply puts one record on files: the path's state at the frame.
func apply(files, start map[string]*WorkspaceFile, c change, w *Workspace) error {
	fc := c.fc
	p := fc.Path
	if !safeRel(p) {
		return fmt.Errorf("frame %d: file.change path %q leaves the workspace (absolute, .. or not clean)", c.frame, p)
	}
	set := func(f *WorkspaceFile) {
		f.Path, f.Changed, f.Op, f.Frame, f.start = p, true, fc.Op, c.frame, start[p]
		files[p] = f
	}
	switch fc.Op {
	case tapefmt.OpWrite:
		f := &WorkspaceFile{Type: "file", Mode: fc.Mode, Source: SourceTape, body: fc.Body}
		if fc.Body.IsZero() && fc.Size > 0 {
			f.Source, f.Why = SourceMissing, fmt.Sprintf("its content is not on the tape (frame %d: too large or unreadable when recorded)", c.frame)
		}
		set(f)
	case tapefmt.OpSymlink:
		set(&WorkspaceFile{Type: "symlink", Target: fc.Target, Source: SourceTape})
	case tapefmt.OpMkdir:
		set(&WorkspaceFile{Type: "dir", Mode: fc.Mode, Source: SourceTape})
	case tapefmt.OpReplaceDir:
		removeTree(files, p)
		set(&WorkspaceFile{Type: "dir", Mode: fc.Mode, Source: SourceTape})
	case tapefmt.OpDelete:
		if _, ok := files[p]; ok || start[p] != nil {
			w.Gone = append(w.Gone, WorkspaceFile{Path: p, Op: tapefmt.OpDelete, Changed: true, Source: SourceTape, Frame: c.frame})
		}
		removeTree(files, p)
	case tapefmt.OpChmod, tapefmt.OpChmodDir:
		s, ok := files[p]
		if !ok {
			set(&WorkspaceFile{Type: map[bool]string{true: "dir", false: "file"}[fc.Op == tapefmt.OpChmodDir], Mode: fc.Mode, Source: SourceMissing,
				Why: fmt.Sprintf("frame %d changed only its mode, and its content as the run found it is not known (no snapshot on the tape, and the recorded folder does not hold it)", c.frame)})
			return nil
		}
		f := *s
		f.Mode = fc.Mode
		set(&f)
	case tapefmt.OpRestore:
		delete(files, p)
		if s := start[p]; s != nil {
			f := *s
			f.start = s
			files[p] = &f
		}
	}
	return nil
}

// safeRel reports whether p is a clean relative path inside its folder.
func safeRel(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && filepath.IsLocal(filepath.FromSlash(p)) &&
		!strings.ContainsRune(p, '\\') && !strings.ContainsRune(p, 0)
}

// removeTree takes p and everything under it out of files.
func removeTree(files map[string]*WorkspaceFile, p string) {
	delete(files, p)
	for q := range files {
		if strings.HasPrefix(q, p+"/") {
			delete(files, q)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Content reads a file of the workspace: from the tape, or from the
// recorded folder.
func (w *Workspace) Content(f WorkspaceFile) ([]byte, error) {
	switch f.Source {
	case SourceTape:
		if f.Type != "file" {
			return nil, nil
		}
		return w.tape.Blob(f.body)
	case SourceFolder:
		return os.ReadFile(f.abs)
	}
	return nil, fmt.Errorf("%s: %s", f.Path, f.Why)
}

// StartContent reads the file as the run found it, nil when the run
// found none there.
func (w *Workspace) StartContent(f WorkspaceFile) ([]byte, error) {
	if f.startUnknown {
		return nil, ErrStartUnknown
	}
	if f.start == nil || f.start.Type != "file" {
		return nil, nil
	}
	return w.Content(*f.start)
}

// underLink refuses a workspace where a path lies under a symlink: a
// hostile tape's way to write through a link out of the folder.
func underLink(files []WorkspaceFile) error {
	links := map[string]int{}
	for _, f := range files {
		if f.Type == "symlink" {
			links[f.Path] = f.Frame
		}
	}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if fr, ok := links[d]; ok {
				where := "the snapshot"
				if f.Frame >= 0 {
					where = fmt.Sprintf("frame %d", f.Frame)
				}
				return fmt.Errorf("%s: path %q lies under %q, a symlink (frame %d): refused, it could lead out of the folder", where, f.Path, d, fr)
			}
		}
	}
	return nil
}

// WriteTo writes the workspace into dir through an os.Root, so that
// nothing lands outside it whatever the tape names: directories first,
// then files, then symlinks (data, never followed), then the directories'
// modes, deepest first. It returns how many paths it wrote; files whose
// content is missing are left out (Missing lists them).
func (ws *Workspace) WriteTo(dir string) (int, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var dirs, links []WorkspaceFile
	n := 0
	for _, f := range ws.Files {
		switch f.Type {
		case "dir":
			if err := root.MkdirAll(f.Path, 0o700); err != nil {
				return n, err
			}
			dirs = append(dirs, f)
		case "symlink":
			links = append(links, f)
		case "file":
			if f.Source == SourceMissing {
				continue
			}
			if err := writeOne(root, ws, f); err != nil {
				return n, err
			}
		default:
			continue
		}
		n++
	}
	for _, f := range links {
		root.RemoveAll(f.Path) // --force over something there
		if err := root.MkdirAll(path.Dir(f.Path), 0o700); err != nil {
			return n, err
		}
		if err := root.Symlink(f.Target, f.Path); err != nil {
			return n, err
		}
		n++
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Path > dirs[j].Path })
	for _, f := range dirs {
		if err := root.Chmod(f.Path, fs.FileMode(f.Mode&0o7777)|0o700); err != nil {
			return n, err
		}
	}
	return n, nil
}

// writeOne writes one file with its content and mode.
func writeOne(root *os.Root, ws *Workspace, f WorkspaceFile) error {
	data, err := ws.Content(f)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := root.MkdirAll(path.Dir(f.Path), 0o700); err != nil {
		return err
	}
	if fi, err := root.Lstat(f.Path); err == nil && !fi.Mode().IsRegular() {
		if err := root.RemoveAll(f.Path); err != nil {
			return err
		}
	}
	if err := root.WriteFile(f.Path, data, 0o600); err != nil {
		return err
	}
	return root.Chmod(f.Path, fs.FileMode(f.Mode&0o777))
}
