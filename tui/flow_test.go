package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/demo"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// waitFor waits until the program's output holds every one of want.
func waitFor(t *testing.T, tm *teatest.TestModel, want ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		for _, w := range want {
			if !bytes.Contains(b, []byte(w)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}

func startDeck(t *testing.T, d *Deck, w, h int) *teatest.TestModel {
	t.Helper()
	tm := teatest.NewTestModel(t, d, teatest.WithInitialTermSize(w, h))
	d.SetSend(tm.GetProgram().Send)
	return tm
}

func quit(t *testing.T, tm *teatest.TestModel) *Deck {
	t.Helper()
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Deck)
}

// TestFlowScrubAndDiff drives the program: scrub to a call, search, then
// the diff of two tapes opened at the first divergence.
func TestFlowScrubAndDiff(t *testing.T) {
	d := New([]string{agentRun, tornTape}, testOptions())
	tm := startDeck(t, d, 120, 40)
	waitFor(t, tm, "frame 0 of 98")
	tm.Type("nn")
	waitFor(t, tm, "frame 21 · llm.request", "context · 4 messages")
	tm.Send(tea.KeyMsg{Type: tea.KeyShiftRight})
	waitFor(t, tm, "step 3/5 · frame 40/98")
	tm.Type("/unicode")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor(t, tm, `"unicode" found in frame`)
	tm.Type("d")
	waitFor(t, tm, "change 1/17", "first divergence: left frame 40")
	tm.Type("nn")
	waitFor(t, tm, "change 3/17")
	tm.Type("N")
	waitFor(t, tm, "change 2/17")
	final := quit(t, tm)
	if final.pane != paneDiff || final.diff.vp.YOffset <= final.diff.first {
		t.Fatalf("n in the diff pane: pane %d, offset %d, divergence at %d", final.pane, final.diff.vp.YOffset, final.diff.first)
	}
	if final.tracks[0].cursor != 40 || final.tracks[0].diverge != 40 {
		t.Fatalf("left needle at %d, divergence mark %d; want 40", final.tracks[0].cursor, final.tracks[0].diverge)
	}
}

// TestFlowForkCancel starts a fork that runs until stopped, and stops it
// with Ctrl-C: the fork's context is cancelled and the deck says so.
func TestFlowForkCancel(t *testing.T) {
	o := testOptions()
	started, stopped := make(chan engine.ForkOptions, 1), make(chan struct{})
	o.Fork = func(ctx context.Context, fo engine.ForkOptions) (*engine.Result, error) {
		started <- fo
		<-ctx.Done()
		close(stopped)
		return &engine.Result{End: tapefmt.RunEnd{ExitCode: 130, Reason: "interrupted"}}, nil
	}
	o.PrepareFork = func(fo *engine.ForkOptions) error { fo.Tape = filepath.Join(t.TempDir(), "fork.jbx"); return nil }
	d := New([]string{agentRun}, o)
	tm := startDeck(t, d, 100, 30)
	waitFor(t, tm, "frame 0 of 98")
	tm.Type("nnf")
	waitFor(t, tm, "Drop the needle at frame 21")
	tm.Send(tea.KeyMsg{Type: tea.KeyTab})
	tm.Send(tea.KeyMsg{Type: tea.KeyTab})
	tm.Type("0.5")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	fo := <-started
	if fo.Frame != 21 || fo.Overrides.Temperature == nil || *fo.Overrides.Temperature != 0.5 ||
		fo.Overrides.Model != "" || fo.Overrides.SystemPrompt != nil || fo.Parent != agentRun {
		t.Fatalf("fork options: %+v", fo)
	}
	waitFor(t, tm, "forking", "stop fork")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Ctrl-C did not cancel the fork")
	}
	waitFor(t, tm, "fork done: exit 130")
	if final := quit(t, tm); final.run == nil || final.run.running() {
		t.Fatal("the fork is still running")
	}
}

// TestFlowFork records the demo agent against the scripted model, then
// forks it from the turntable at its third call with another model: the
// fork's frames stream into a second timeline, and d diffs the two. Then
// it forks the fork from the fork's own timeline: the first fork becomes
// the parent on screen, and b lists the three tapes.
func TestFlowFork(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	agent, err := demo.WriteAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "AGENT_MODEL=demo-large", "OPENAI_API_KEY=sk-test-not-a-key")
	parent := filepath.Join(t.TempDir(), "parent.jbx")
	ups := map[string]string{"openai": srv.OpenAIBaseURL(), "anthropic": srv.AnthropicBaseURL()}
	if _, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{python, agent}, Dir: dir, Env: env, Name: "demo"},
		Tape:       parent, Upstreams: ups,
	}); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, parent)
	forkTape := filepath.Join(t.TempDir(), "fork.jbx")
	fork2 := filepath.Join(t.TempDir(), "fork2.jbx")
	o := testOptions()
	o.Upstreams, o.ListModels = ups, nil // the form asks the scripted server for its models
	o.PrepareFork = func(fo *engine.ForkOptions) error {
		fo.Tape, fo.Dir, fo.Env = forkTape, dir, env
		if fo.Parent == forkTape {
			fo.Tape = fork2
		}
		return nil
	}
	d := New([]string{parent}, o)
	tm := startDeck(t, d, 120, 40)
	waitFor(t, tm, "parent.jbx")
	tm.Type("nnn")
	tm.Type("f")
	waitFor(t, tm, "Drop the needle", "live to", srv.OpenAIBaseURL(), "pick one of", "[demo-large]")
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlU})
	tm.Type("demo-small")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor(t, tm, "fork done: exit 0")
	tm.Type("d")
	waitFor(t, tm, "parent.jbx ⟷ fork.jbx", "first divergence")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	tm.Send(tea.KeyMsg{Type: tea.KeyTab})
	tm.Send(tea.KeyMsg{Type: tea.KeyHome})
	tm.Type("nnnnn")
	tm.Type("f")
	waitFor(t, tm, "Drop the needle")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor(t, tm, "forking to fork2.jbx")
	waitFor(t, tm, "fork done: exit 0")
	tm.Type("b")
	waitFor(t, tm, "forks · 3 tapes", "└ fork2.jbx")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	final := quit(t, tm)
	if len(final.tracks) != 2 || final.tracks[0].tl.Path() != forkTape || final.tracks[1].tl.Path() != fork2 || final.tracks[0].forkAt < 0 {
		t.Fatalf("after the fork of the fork: tracks %v, fork at %d", trackPaths(final), final.tracks[0].forkAt)
	}
	if r := final.tracks[1].tl.Row(0); !r.Fork || !strings.Contains(r.Summary, "fork of fork.jbx") {
		t.Fatalf("the second fork's run.start: %+v", r)
	}
	tapetest.Verify(t, forkTape)
	tapetest.Verify(t, fork2)
}

// cleanEnv is the environment without the developer's provider settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestForkFollowsTheTapeItWrote: a fork named as an earlier one writes
// NAME-2.jbx (the engine never overwrites a tape), where the turntable
// opened, showed and diffed NAME.jbx, the earlier fork's. It follows the
// tape the engine says it made.
func TestForkFollowsTheTapeItWrote(t *testing.T) {
	dir := t.TempDir()
	whole, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	named, written := filepath.Join(dir, "try.jbx"), filepath.Join(dir, "try-2.jbx")
	if err := os.WriteFile(named, []byte("an earlier fork's tape"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.PrepareFork = func(fo *engine.ForkOptions) error { fo.Tape = named; return nil }
	o.Fork = func(ctx context.Context, fo engine.ForkOptions) (*engine.Result, error) {
		if err := os.WriteFile(written, whole, 0o644); err != nil {
			return nil, err
		}
		if fo.OnTape != nil {
			fo.OnTape(written) // as the engine tells the path it made
		}
		return &engine.Result{Tape: written}, nil
	}
	d := New([]string{agentRun}, o)
	tm := startDeck(t, d, 100, 30)
	waitFor(t, tm, "frame 0 of 98")
	tm.Type("nnf")
	waitFor(t, tm, "Drop the needle at frame 21")
	tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	waitFor(t, tm, "fork done")
	final := quit(t, tm)
	if final.run == nil {
		t.Fatal("no fork ran")
	}
	if final.run.tape != written {
		t.Fatalf("the fork's tape: %q, want %s", final.run.tape, written)
	}
	if i := final.familyIndex(written); i < 0 {
		t.Errorf("the fork list does not hold %s: %+v", written, final.family)
	}
	if len(final.tracks) != 2 || final.tracks[1].tl.Path() != written {
		t.Errorf("the fork's timeline is not %s", written)
	}
}
