package timeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestLargeFileChanges: a file over the 1 MiB a detail shows was cut
// before it was looked at: 3 MiB of binary said "1048576 bytes of binary
// data", a text whose cut split a character was taken for binary, and a
// cut text's diff ended as if the file did.
func TestLargeFileChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bin := make([]byte, 3<<20)
	for i := range bin {
		bin[i] = byte(i*7 + i/3)
	}
	text := []byte(strings.Repeat("a", maxShownBody-1) + "é and more text after the cut\n")
	hb, _ := w.PutBlob("file", bin)
	ht, _ := w.PutBlob("file", text)
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	w.Append(0, tapefmt.FileChange{Op: tapefmt.OpWrite, Path: "bin3m.dat", Body: hb, Size: int64(len(bin)), Mode: 0o644})
	w.Append(0, tapefmt.FileChange{Op: tapefmt.OpWrite, Path: "utf8.txt", Body: ht, Size: int64(len(text)), Mode: 0o644})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	d, err := tl.Detail(1)
	if err != nil || d.File == nil || !d.File.Binary || d.File.Content != "(3145728 bytes of binary data)" {
		t.Errorf("3 MiB of binary: %+v, %v", d.File, err)
	}
	d, err = tl.Detail(2)
	if err != nil || d.File == nil || d.File.Binary || !strings.Contains(d.File.Diff, fmt.Sprintf("cut here: the content is %d bytes", len(text))) {
		t.Errorf("a text over 1 MiB: binary %v, %v, diff ends %q", d.File != nil && d.File.Binary, err, d.File.Diff[max(0, len(d.File.Diff)-200):])
	}
}
