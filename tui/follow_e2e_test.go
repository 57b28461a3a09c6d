//go:build unix

package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestFollowRecordingTmux plays a tape while this test still records it,
// in a 120x30 tmux pane: the header says it is recording (not "torn"),
// the needle starts on the newest frame and stays there as steps are
// committed, and when
// the writer closes the tape the turntable says so and shows its end.
func TestFollowRecordingTmux(t *testing.T) {
	t.Parallel()
	testenv.RequireTmux(t)
	testenv.Short(t, "runs the binary in tmux")
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	tape := filepath.Join(t.TempDir(), "live.jbx")
	w, err := tapefmt.Create(tape, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	step := func(name string, commit bool) {
		t.Helper()
		must(w.Append(0, tapefmt.ToolCall{ID: name, Name: name, Args: json.RawMessage(`{}`), Source: "llm"}))
		must(w.Append(0, tapefmt.ToolResult{ID: name, Result: json.RawMessage(`"ok"`)}))
		if commit {
			must(w.Commit())
		}
	}
	must(w.Append(0, tapefmt.RunStart{Argv: []string{"python", "agent.py"}, Mode: "record"}))
	step("first_tool", true) // frames 1-3
	s := &tmuxSession{t: t, socket: fmt.Sprintf("jukebox-follow-%d", os.Getpid()), name: "play"}
	t.Cleanup(func() { s.tmux("kill-server") })
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "30",
		fmt.Sprintf("env NO_COLOR= %s play %s", bin, tape)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	scr := s.waitScreen("● recording", "frame 3 of 4", "first_tool")
	if s.has("torn") {
		t.Fatalf("a tape being recorded reads as torn:\n%s", scr)
	}
	step("second_tool", true) // frames 4-6: the needle follows
	s.waitScreen("frame 6 of 7", "second_tool", "● recording")
	step("half_done", false) // a step in progress (frames 7-8)
	step("third_tool", true) // frames 9-11: the step is whole
	s.waitScreen("frame 11 of 12", "half_done", "third_tool")
	// Away from the newest frame, the needle stays where it was put.
	s.keys("Home")
	s.waitScreen("frame 0 of 12")
	step("fourth_tool", true)
	s.waitScreen("frame 0 of 15")
	s.keys("End")
	s.waitScreen("frame 14 of 15")
	must(w.Append(0, tapefmt.RunEnd{}))
	must(nil, w.Close())
	scr = s.waitScreen("the recording ended", "frame 15 of 16", "end")
	if s.has("● recording") || s.has("torn") {
		t.Fatalf("after the writer closed the tape:\n%s", scr)
	}
}

// has reports whether the screen shows text now.
func (s *tmuxSession) has(text string) bool {
	_, ok := s.shows(0, text)
	return ok
}
