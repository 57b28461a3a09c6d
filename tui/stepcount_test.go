package tui

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestOneStepCount: a run that ends in a step it never committed (four
// step.commit frames, then a call and the run's end) has five steps in
// the header, the scrubber line, the frame view's title and the step
// view alike; not "4 steps" in one place, "after step 4/4" in another
// and "step 5" in a third. Its header shows no "0 tok · $0": no call
// reported usage.
func TestOneStepCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i := range 5 {
			id := fmt.Sprint(i)
			w.Append(0, tapefmt.ToolCall{ID: id, Name: "run", Args: json.RawMessage(`{}`), Source: "llm"})
			w.Append(0, tapefmt.ToolResult{ID: id, Result: json.RawMessage(`"ok"`)})
			if i < 4 {
				if _, err := w.Commit(); err != nil {
					return err
				}
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 200, 40, path)
	press(d, keyEnd)
	if v := d.View(); !strings.Contains(d.header(), "5 steps") || !strings.Contains(v, "step 5/5 · frame") ||
		!strings.Contains(d.frame.View(), "· step 5/5 ·") || strings.Contains(v, "after step") {
		t.Fatalf("at the run's end:\n%s", v)
	}
	if strings.Contains(d.header(), "$0") || strings.Contains(d.header(), "0 tok") {
		t.Errorf("a run with no model call: %s", d.header())
	}
	press(d, runes("S"))
	if tv := d.tracks[0]; tv.n() != 5 || !strings.Contains(d.View(), "step 5 ·") {
		t.Fatalf("the step view has %d rows:\n%s", tv.n(), d.View())
	}
	// A run whose end follows its last commit has as many steps as commits.
	d = newDeck(t, 200, 40, agentRun)
	press(d, keyEnd)
	if !strings.Contains(d.header(), "5 steps") || !strings.Contains(d.View(), "step 5/5 · frame 97/98") {
		t.Fatalf("agent-run at its end:\n%s", d.View())
	}
}
