package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestHostileTextTmux plays a tape full of emoji sequences in an 80x24
// tmux pane, the terminal of issue 33 (tmux draws 👍🏽 four columns wide):
// on every frame the header stays on the first line and the help line on
// the last (a line that wrapped scrolled the header away), and ctrl+l
// repaints a screen something else wrote over.
func TestHostileTextTmux(t *testing.T) {
	t.Parallel()
	testenv.RequireTmux(t)
	testenv.Short(t, "runs the binary in tmux")
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	tape := filepath.Join(t.TempDir(), "hostile.jbx")
	writeHostileTape(t, tape, "")
	s := &tmuxSession{t: t, socket: fmt.Sprintf("jukebox-hostile-%d", os.Getpid()), name: "play"}
	t.Cleanup(func() { s.tmux("kill-server") })
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", "80", "-y", "24",
		fmt.Sprintf("env NO_COLOR= %s play %s", bin, tape)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	s.waitScreen("JUKEBOX", "frame 0 of 13", "q quit")
	for i := 1; i < 13; i++ {
		s.keys("l")
		scr := s.waitScreen(fmt.Sprintf("frame %d of 13", i))
		lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
		if !strings.Contains(lines[0], "JUKEBOX") || len(lines) != 24 || !strings.Contains(lines[23], "quit") {
			t.Fatalf("frame %d: the screen scrolled (%d lines):\n%s", i, len(lines), scr)
		}
	}
	// Text written to the terminal behind the turntable's back stays until
	// ctrl+l repaints.
	tty, _ := s.tmux("list-panes", "-t", s.name, "-F", "#{pane_tty}")
	if err := os.WriteFile(strings.TrimSpace(tty), []byte("\x1b[5;5HSCRIBBLED-OVER"), 0); err != nil {
		t.Fatal(err)
	}
	s.waitScreen("SCRIBBLED-OVER")
	s.keys("C-l")
	deadline := time.Now().Add(10 * time.Second)
	for scr := s.screen(); strings.Contains(scr, "SCRIBBLED-OVER") || !strings.Contains(scr, "JUKEBOX"); scr = s.screen() {
		if time.Now().After(deadline) {
			t.Fatalf("ctrl+l did not repaint:\n%s", scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
