//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestBoothTapesMeta: what a plain run leaves besides content is on the
// tape's file.change frames: a setuid mode as chmod takes it, user
// xattrs, mtimes, and the other name of a hard-linked file (link).
func TestBoothTapesMeta(t *testing.T) {
	t.Parallel()
	if caps := sandbox.Probe(context.Background(), t.TempDir()); !caps.Overlay {
		testenv.Unavailable(t, "the kernel overlay booth", "run on Linux with unprivileged user namespaces allowed")
	}
	py := testenv.RequirePython(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "meta.jbx")
	script := `set -e; echo n > n.txt; chmod 4755 n.txt; ln n.txt m.txt; touch -d 2001-01-01T00:00:00Z old.txt; ` +
		py + ` -c "import os; os.setxattr('n.txt', 'user.x', b'1')"`
	var out bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", script}, Dir: ws, Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitAlways, Mode: sandbox.ModeOverlay, Notice: &out}},
		Tape: tape})
	if err != nil || res.Booth == nil || !res.Booth.Committed {
		t.Fatalf("record: %v %+v\n%s", err, res.Booth, out.String())
	}
	checkTape(t, tape)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	got := map[string]tapefmt.FileChange{}
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		if p, err := f.Decode(); err == nil {
			if fc, ok := p.(*tapefmt.FileChange); ok {
				got[fc.Path] = *fc
			}
		}
	}
	// "m.txt" sorts first: it holds the content, n.txt is its other name.
	if fc := got["m.txt"]; fc.Op != tapefmt.OpWrite || fc.Mode != 0o4755 || string(fc.Xattrs["user.x"]) != "1" || fc.MtimeNs == 0 || fc.Link != "" {
		t.Errorf("m.txt on the tape: %+v", fc)
	}
	if fc := got["n.txt"]; fc.Op != tapefmt.OpWrite || fc.Link != "m.txt" || fc.Mode != 0o4755 {
		t.Errorf("n.txt on the tape: %+v", fc)
	}
	want := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	if fc := got["old.txt"]; fc.Op != tapefmt.OpChmod || fc.MtimeNs != want || fc.Mode != 0o644 {
		t.Errorf("old.txt on the tape: %+v", fc)
	}
}
