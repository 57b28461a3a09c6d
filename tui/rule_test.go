package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRulesKeepErrorFacts: a call stopped with a long reason shows all of
// it at any width, on the rule of its answer and under it (issue 33: rules
// were cut at the pane's edge, losing the reason of interrupted and
// breaker-stopped calls).
func TestRulesKeepErrorFacts(t *testing.T) {
	reason := "breaker tripped: the context reached 97% of 128,000 tokens, over the limit of 90% set by --max-context"
	path := filepath.Join(t.TempDir(), "stopped.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
		w.AppendAt(time.Millisecond, 0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o-2024-08-06"})
		w.AppendAt(2*time.Millisecond, 0, tapefmt.LLMResponse{Call: 0, Status: 502, Error: reason})
		_, err := w.AppendAt(3*time.Millisecond, 0, tapefmt.RunEnd{ExitCode: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{40, 80, 120, 200} {
		d := newDeck(t, w, 60, path)
		press(d, runes("n"), runes("n"))
		var words []string
		for _, l := range strings.Split(d.frame.vp.View(), "\n") {
			words = append(words, strings.Fields(strings.Trim(l, "│─ "))...)
		}
		// (a wrap may break a line after a hyphen: spaces are not compared)
		if got := strings.Join(words, ""); !strings.Contains(got, strings.ReplaceAll(reason, " ", "")) {
			t.Errorf("%d columns: the reason is not whole in the frame view:\n%s", w, d.frame.vp.View())
		}
	}
}

// TestRowsKeepTheModel: a narrow timeline drops a request row's method
// and path before its model (issue 33: rows cut the model name), and a
// cut row ends in "…".
func TestRowsKeepTheModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
		w.AppendAt(time.Millisecond, 0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o-2024-08-06", Stream: true})
		_, err := w.AppendAt(2*time.Millisecond, 0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{40, 60, 80} {
		d := newDeck(t, w, 20, path)
		v := d.View()
		if !strings.Contains(v, "gpt-4o-2024-08-06") {
			t.Errorf("%d columns: the request row lost its model:\n%s", w, v)
		}
	}
}

// TestNoDiffWhileForking: d during a running fork says why it waits rather
// than diffing a tape still being written (issue 33).
func TestNoDiffWhileForking(t *testing.T) {
	d := newDeck(t, 120, 40, agentRun, tornTape)
	d.run = &forkRun{st: d.st, cancelFn: func() {}, done: make(chan struct{})}
	defer func() { d.run = nil }() // a run made by hand: nothing for Close to stop
	d.sync()                       // as the fork's first event does
	press(d, runes("d"))
	if d.pane == paneDiff || !strings.Contains(d.status, "a fork is running") {
		t.Errorf("d while a fork runs: pane %v, status %q", d.pane, d.status)
	}
}

// TestNoUsageNoZeroCost: a failed call that reported no usage shows no
// "0→0 tok" and no "$0", in its row or its frame (issue 33).
func TestNoUsageNoZeroCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nousage.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
		w.AppendAt(time.Millisecond, 0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o"})
		w.AppendAt(2*time.Millisecond, 0, tapefmt.LLMResponse{Call: 0, Status: 502, Error: "upstream reset the connection"})
		_, err := w.AppendAt(3*time.Millisecond, 0, tapefmt.RunEnd{ExitCode: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 120, 30, path)
	press(d, runes("g"), runes("2"), keyEnter)
	v := d.View()
	for _, l := range strings.Split(v, "\n") {
		if row, _, _ := strings.Cut(l, "│"); strings.Contains(row, "« #0") && strings.Contains(row, "$0") {
			t.Errorf("the row of a call without usage shows $0: %q", row)
		}
	}
	if f := d.frame.vp.View(); strings.Contains(f, "0→0 tok") || strings.Contains(f, "$0") || !strings.Contains(f, "no usage reported") {
		t.Errorf("the frame of a call without usage:\n%s", f)
	}
}
