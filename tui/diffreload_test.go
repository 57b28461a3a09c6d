package tui

import (
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestDiffWhileTheForkReloads: the comparison reads both timelines in the
// background; a fork's timeline reloaded meanwhile (its tape grew, or
// the fork ended) is closed only once the comparison is ready. It was
// closed at once, and the diff pane said "read fork.jbx: file already
// closed" (TestFlowFork, pressing d just as the fork ended, failed so).
func TestDiffWhileTheForkReloads(t *testing.T) {
	dir := t.TempDir()
	parent, fork := filepath.Join(dir, "parent.jbx"), filepath.Join(dir, "fork.jbx")
	for _, p := range []string{parent, fork} {
		if err := tapegen.WriteFile(p, tapegen.Spec{Steps: 3, Chunks: 4, Model: "gpt-4o-mini"}); err != nil {
			t.Fatal(err)
		}
	}
	d := New([]string{parent, fork}, testOptions())
	defer d.Close()
	if len(d.tracks) != 2 {
		t.Fatalf("%d tracks, want 2", len(d.tracks))
	}
	load := d.toggleDiff()
	if load == nil {
		t.Fatal("no comparison to load")
	}
	old := d.tracks[1].tl
	tl, err := timeline.Open(fork)
	if err != nil {
		t.Fatal(err)
	}
	d.run = &forkRun{finished: true, cancelFn: func() {}} // the fork has just ended
	d.forkReloaded(forkReloadMsg{tl: tl})
	d.run = nil // nothing to stop at Close
	if d.tracks[1].tl != tl {
		t.Fatal("the fork's track did not take the reloaded timeline")
	}
	msg, ok := load().(diffReadyMsg)
	if !ok || msg.err != nil || msg.res == nil {
		t.Fatalf("the comparison, its fork timeline reloaded meanwhile: %+v", msg)
	}
	d.diffReady(msg)
	if _, err := old.Tape().Frame(0); err == nil {
		t.Error("the replaced timeline is still open after the comparison")
	}
}
