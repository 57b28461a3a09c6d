package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestBackgroundInTmux: inside tmux, whose pane answers the background
// query with white, the turntable draws the light palette, as
// --background light does, not the dark one (issue 33: a light terminal
// inside tmux got the dark palette, cream text on white). CI is set, as
// on a CI runner: termenv took it for "not a terminal" and drew without
// colour.
func TestBackgroundInTmux(t *testing.T) {
	t.Parallel()
	testenv.RequireTmux(t)
	testenv.Short(t, "runs the binary in tmux")
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	tape, _ := filepath.Abs(agentRun)
	screens := map[string]string{}
	// The light and dark screens first; then the asked-for one, again up
	// to twice when it differs from light: on a loaded machine a first
	// answer can come late (play asks again too, multiplexerDark).
	for try, bg := range []string{"light", "dark", "", "", ""} {
		if try > 2 && screens[""] == screens["light"] {
			break
		}
		s := &tmuxSession{t: t, socket: fmt.Sprintf("jukebox-bg%s-%d-%d", bg, os.Getpid(), try), name: "play"}
		t.Cleanup(func() { s.tmux("kill-server") })
		cmd := fmt.Sprintf("env -u NO_COLOR CI=true TERM=tmux-256color COLORTERM=truecolor %s play %s", bin, tape)
		if bg != "" {
			cmd = fmt.Sprintf("env -u NO_COLOR CI=true TERM=tmux-256color COLORTERM=truecolor JUKEBOX_BACKGROUND=%s %s play %s", bg, bin, tape)
		}
		// The first window sets the style the second, the turntable's, is
		// drawn with: a white pane.
		if out, err := s.tmux("-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", "100", "-y", "30", "sleep 60", ";",
			"set", "-g", "window-style", "bg=#ffffff", ";", "new-window", "-t", s.name+":1", cmd); err != nil {
			t.Fatalf("tmux new-session: %v %s", err, out)
		}
		s.name = "play:1"
		s.waitScreen("JUKEBOX", "frame 0 of 98")
		out, _ := s.tmux("capture-pane", "-e", "-p", "-t", s.name)
		screens[bg] = out
	}
	if screens[""] != screens["light"] {
		t.Errorf("in a white tmux pane the turntable does not draw as --background light does")
	}
	if screens["light"] == screens["dark"] {
		t.Errorf("--background light and dark draw the same screen")
	}
}
