package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// hostileTape writes a booth tape whose workspace holds the given step
// records (and snapshot entries), after a run.start and a tx.begin.
func hostileTape(t *testing.T, snap []tapefmt.SnapshotEntry, changes ...tapefmt.FileChange) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hostile.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	must(t, err)
	_, err = w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Cwd: "/nonexistent-ws"})
	must(t, err)
	_, err = w.Append(0, tapefmt.TxBegin{Tx: "tx1", Workspace: "/nonexistent-ws"})
	must(t, err)
	if snap != nil {
		for i := range snap {
			if snap[i].Type == "file" {
				snap[i].Body, err = w.PutBlob("file", []byte("start"))
				must(t, err)
			}
		}
		_, err = w.Append(0, tapefmt.Snapshot{Tx: "tx1", Workspace: "/nonexistent-ws", Part: 1, Parts: 1, Files: snap})
		must(t, err)
	}
	body, err := w.PutBlob("file", []byte("pwned"))
	must(t, err)
	for _, c := range changes {
		c.Tx = "tx1"
		if c.Op == tapefmt.OpWrite {
			c.Body, c.Size = body, 5
		}
		if c.Step == 0 {
			c.Step = 1
		}
		_, err = w.Append(0, c)
		must(t, err)
	}
	_, err = w.Append(0, tapefmt.RunEnd{})
	must(t, err)
	must(t, w.Close())
	return path
}

// TestCheckoutRefusesPathsOutOfTheFolder: a tape that names ../, an
// absolute path, or a path under a symlink it made is refused whole,
// with the frame named, and nothing is written in or outside the folder.
func TestCheckoutRefusesPathsOutOfTheFolder(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	must(t, os.Mkdir(outside, 0o755))
	for name, c := range map[string]struct {
		snap    []tapefmt.SnapshotEntry
		changes []tapefmt.FileChange
		want    string
	}{
		"dotdot":      {nil, []tapefmt.FileChange{{Op: tapefmt.OpWrite, Path: "../outside/pwned"}}, "frame 3"},
		"absolute":    {nil, []tapefmt.FileChange{{Op: tapefmt.OpWrite, Path: outside + "/pwned"}}, "frame 3"},
		"unclean":     {nil, []tapefmt.FileChange{{Op: tapefmt.OpWrite, Path: "a/../../outside/pwned"}}, "frame 3"},
		"snapshot":    {[]tapefmt.SnapshotEntry{{Path: "../outside/pwned", Type: "file"}}, nil, "frame 2"},
		"via-symlink": {nil, []tapefmt.FileChange{{Op: tapefmt.OpSymlink, Path: "l", Target: outside}, {Op: tapefmt.OpWrite, Path: "l/pwned"}}, "frame 3"},
		"snap-link": {[]tapefmt.SnapshotEntry{{Path: "l", Type: "symlink", Target: outside}},
			[]tapefmt.FileChange{{Op: tapefmt.OpWrite, Path: "l/pwned"}}, "frame 3"},
	} {
		t.Run(name, func(t *testing.T) {
			tape := hostileTape(t, c.snap, c.changes...)
			dir := filepath.Join(t.TempDir(), "out")
			_, errs, code := jbIn("", nil, "checkout", tape, "--frame", "3", dir)
			if code != ExitUsage || !strings.Contains(errs, c.want) || !strings.Contains(errs, "--frame 3") {
				t.Errorf("exit %d, want %d naming %q:\n%s", code, ExitUsage, c.want, errs)
			}
			if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
				t.Fatalf("the tape wrote outside the folder")
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("a refused checkout wrote %v", ents)
			}
		})
	}
}

// TestCheckoutRefusesBadUse: a non-empty folder without --force, a frame
// past the end and a tape of a run outside the booth are refused with
// the frame named; --force writes over, and what cannot be rebuilt
// (no snapshot, the recorded folder gone) is listed, exit 1.
func TestCheckoutRefusesBadUse(t *testing.T) {
	t.Parallel()
	tape := hostileTape(t, nil, tapefmt.FileChange{Op: tapefmt.OpWrite, Path: "a.txt"}, tapefmt.FileChange{Op: tapefmt.OpChmod, Path: "b.txt", Mode: 0o600})
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("mine"), 0o644))
	if _, errs, code := jbIn("", nil, "checkout", tape, "--frame", "2", dir); code != ExitUsage || !strings.Contains(errs, "not empty") {
		t.Errorf("non-empty folder: exit %d\n%s", code, errs)
	}
	if _, errs, code := jbIn("", nil, "checkout", tape, "--frame", "99", dir); code != ExitUsage || !strings.Contains(errs, "--frame 99") {
		t.Errorf("frame past the end: exit %d\n%s", code, errs)
	}
	out, errs, code := jbIn("", nil, "checkout", tape, "--frame", "2", "--force", dir)
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "pwned" || code != ExitOK {
		t.Errorf("--force: exit %d, a.txt %q\n%s%s", code, data, out, errs)
	}
	out, errs, code = jbIn("", nil, "checkout", tape, "--frame", "3", "--force", "--json", dir)
	if code != ExitInternal || !strings.Contains(out, `"missing": [`) || !strings.Contains(out, `"b.txt"`) || !strings.Contains(errs, "could not be rebuilt") {
		t.Errorf("chmod of a file the start does not hold: exit %d\n%s%s", code, out, errs)
	}
	plain := filepath.Join(t.TempDir(), "plain.jbx")
	w, err := tapefmt.Create(plain, tapefmt.Options{})
	must(t, err)
	_, err = w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	must(t, err)
	must(t, w.Close())
	if _, errs, code := jbIn("", nil, "checkout", plain, "--frame", "0", t.TempDir()); code != ExitUsage || !strings.Contains(errs, "--booth") {
		t.Errorf("a tape outside the booth: exit %d\n%s", code, errs)
	}
}
