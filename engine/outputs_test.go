package engine

import (
	"bytes"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestOutputsKeepStdoutForReplayOnly: the agent's stdout passes through
// and onto the tape either way; a copy of all of it is kept only for a
// replay, which compares it with the recording's. A recording kept one
// too: an agent that printed 67 MB took jukebox to 330 MB (36 MB now).
func TestOutputsKeepStdoutForReplayOnly(t *testing.T) {
	for _, mode := range []tapefmt.RunMode{tapefmt.ModeRecord, tapefmt.ModeFork, tapefmt.ModeReplay} {
		s := &session{mode: mode}
		o := s.outputs()
		var term bytes.Buffer
		w := o.writer(1, &term)
		w.Write([]byte("step 1\n"))
		w.Write([]byte("step 2\n"))
		if term.String() != "step 1\nstep 2\n" {
			t.Errorf("%s: the terminal got %q", mode, term.String())
		}
		kept := string(o.stdoutCopy())
		if want := map[bool]string{true: "step 1\nstep 2\n", false: ""}[mode == tapefmt.ModeReplay]; kept != want {
			t.Errorf("%s: kept %q of stdout, want %q", mode, kept, want)
		}
	}
}
