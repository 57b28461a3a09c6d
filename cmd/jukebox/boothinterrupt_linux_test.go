package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestBoothInterrupt: Ctrl-C during a booth run reaches the agent, which
// may clean up; the run is kept open, never committed (--commit always),
// and jukebox exits 130. A second Ctrl-C ends an agent that ignores the
// first at once; the grace period ends it too; the agent's foreground
// child hears Ctrl-C as well. Before, the agent was
// killed outright, jukebox exited 255 and --commit always committed.
func TestBoothInterrupt(t *testing.T) {
	requireConfinedBooth(t)
	t.Parallel()
	for _, c := range []struct {
		name, agent, grace, mode string
		ctrlC                    int
		want                     string // what the agent printed
	}{
		{"forwarded", `trap 'echo got INT; echo cleaned > cleaned.txt; exit 9' INT`, "1h", "auto", 1, "got INT"},
		// A copy's agent shares jukebox's group: Ctrl-C reaches it once.
		{"copy", `trap 'echo got INT' INT`, "300ms", "copy", 1, "got INT"},
		{"second", `trap 'echo got INT' INT`, "1h", "auto", 2, "got INT"},
		{"grace", `trap 'echo got INT' INT`, "100ms", "auto", 1, "got INT"},
		// The agent's foreground child hears it too, as from a terminal:
		// the init passes Ctrl-C to the agent's process group.
		{"group", `trap 'echo got INT' INT; sh -c "trap 'echo child got INT; exit 4' INT; echo ready; i=0; while [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i+1)); done"; exit 5`, "1h", "auto", 1, "child got INT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			agent := "echo made > made.txt; " + c.agent + "; echo ready; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"
			j := startPTY(t, ws, 30*time.Second, "record", "-o", filepath.Join(t.TempDir(), "int.jbx"), "--booth",
				"--commit", "always", "--stop-grace", c.grace, "--booth-mode", c.mode, "--", "sh", "-c", agent)
			j.waitFor(regexp.MustCompile(`\nready`))
			j.typeIn("\x03")
			j.waitFor(regexp.MustCompile(`got INT`))
			if c.ctrlC == 2 {
				j.typeIn("\x03") // not passed on: it kills
			}
			code := j.exit()
			out := j.output()
			if strings.Count(out, c.want) != 1 {
				t.Errorf("the agent got SIGINT %d times, want once:\n%q", strings.Count(out, c.want), out)
			}
			if code != ExitInterrupted {
				t.Errorf("exit %d, want %d:\n%q", code, ExitInterrupted, out)
			}
			if exists(ws, "made.txt") || openTx(t, ws) == "" {
				t.Fatalf("the interrupted run was not kept open (made.txt committed: %v):\n%q", exists(ws, "made.txt"), out)
			}
			if !strings.Contains(out, "jukebox booth commit") {
				t.Errorf("no word on how to go on:\n%q", out)
			}
		})
	}
}
