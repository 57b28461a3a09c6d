package timeline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestWorkspaceOnCompatTapes: the tapes people kept (testdata/tapes)
// still open, and asking for their workspace says plainly that they hold
// no booth run, never a wrong workspace.
func TestWorkspaceOnCompatTapes(t *testing.T) {
	for _, name := range []string{"agent-run.jbx", "sealed.jbx", "torn.jbx"} {
		tl, err := Open(filepath.Join("..", "testdata", "tapes", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := tl.WorkspaceAt(tl.Len() - 1); !errors.Is(err, ErrNoBooth) {
			t.Errorf("%s: workspace %v, want ErrNoBooth", name, err)
		}
		tl.Close()
	}
}

// TestWorkspaceOfATapeWithoutStepRecords: a booth tape written before
// step records (tx.begin, the change set at the end) rebuilds from its
// recorded folder: the start before the change set, the change set
// after it, with the folder's untouched files.
func TestWorkspaceOfATapeWithoutStepRecords(t *testing.T) {
	folder := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(folder, "a.txt"), []byte("a0"), 0o644))
	must(os.WriteFile(filepath.Join(folder, "b.txt"), []byte("b0"), 0o644))
	path := filepath.Join(t.TempDir(), "old.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	must(err)
	app := func(p tapefmt.Payload) {
		_, err := w.Append(0, p)
		must(err)
	}
	body, err := w.PutBlob("file", []byte("a1"))
	must(err)
	app(tapefmt.RunStart{Argv: []string{"agent"}})
	app(tapefmt.TxBegin{Tx: "t", Workspace: folder})
	app(tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("working")})
	app(tapefmt.FileChange{Tx: "t", Op: tapefmt.OpWrite, Path: "a.txt", Body: body, Size: 2, Mode: 0o644})
	app(tapefmt.FileChange{Tx: "t", Op: tapefmt.OpDelete, Path: "b.txt"})
	app(tapefmt.TxRollback{Tx: "t"})
	must(w.Close())
	tl, err := Open(path)
	must(err)
	defer tl.Close()
	for frame, want := range map[int]map[string]string{2: {"a.txt": "a0", "b.txt": "b0"}, 5: {"a.txt": "a1"}} {
		ws, err := tl.WorkspaceAt(frame)
		must(err)
		if ws.Steps || ws.Snapshot {
			t.Errorf("frame %d: steps %v, snapshot %v on a tape with neither", frame, ws.Steps, ws.Snapshot)
		}
		got := map[string]string{}
		for _, f := range ws.Files {
			data, err := ws.Content(f)
			must(err)
			got[f.Path] = string(data)
		}
		if len(got) != len(want) || got["a.txt"] != want["a.txt"] || got["b.txt"] != want["b.txt"] {
			t.Errorf("frame %d: workspace %q, want %q", frame, got, want)
		}
	}
}
