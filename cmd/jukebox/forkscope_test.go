package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestForkScopeFlags: fork's overrides reach the rest of the run unless
// --once; --set rewrites a field of the fork call, and a path the request
// lacks is exit 2 before the agent starts.
func TestForkScopeFlags(t *testing.T) {
	work, fork := demoForker(t)
	t.Setenv("AGENT_MODEL", "demo-large")
	for _, once := range []bool{false, true} {
		tape := filepath.Join(work, "fork.jbx")
		if once {
			tape = filepath.Join(work, "fork-once.jbx")
			fork(ExitOK, tape, "--model", "demo-small", "--once", "--set", "messages.0.content=Be terse.")
		} else {
			// The fork runs the parent's recorded command, and says so first.
			errs := fork(ExitOK, tape, "--model", "demo-small", "--set", "messages.0.content=Be terse.")
			if !strings.Contains(errs, "jukebox: note: running the recorded command: ") {
				t.Errorf("the fork did not name the recorded command it runs:\n%s", errs)
			}
		}
		tp := openTape(t, tape)
		start, err := engine.FirstRunStart(tp)
		must(t, err)
		var over engine.Overrides
		must(t, json.Unmarshal(start.Parent.Overrides, &over))
		var models []string
		for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
			must(t, err)
			p, _ := f.Decode()
			models = append(models, p.(*tapefmt.LLMRequest).Model)
		}
		want := "demo-small"
		if once {
			want = "demo-large"
			if over.Scope != engine.ScopeOnce {
				t.Errorf("--once: scope %q on the tape", over.Scope)
			}
		} else if over.Scope != engine.ScopeAll {
			t.Errorf("scope %q on the tape, want all", over.Scope)
		}
		if len(over.Set) != 1 || over.Set[0].Path != "messages.0.content" || string(over.Set[0].Value) != `"Be terse."` {
			t.Errorf("set on the tape: %+v", over.Set)
		}
		if len(models) < 3 || models[0] != "demo-small" {
			t.Fatalf("fork models %q", models)
		}
		for i, m := range models[1:] {
			if m != want {
				t.Errorf("once=%v: call %d after the fork call asked %q, want %q", once, i+1, m, want)
			}
		}
	}

	bad := filepath.Join(work, "bad.jbx")
	errs := fork(ExitUsage, bad, "--set", "messages.9.content=x")
	if !strings.Contains(errs, "messages.9.content") {
		t.Errorf("a path the request lacks: %q", errs)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("the fork wrote a tape for overrides that do not apply")
	}
	setFile := filepath.Join(work, "set.json")
	must(t, os.WriteFile(setFile, []byte(`["not", "an object"]`), 0o644))
	if errs := fork(ExitUsage, bad, "--set-file", setFile); !strings.Contains(errs, "--set-file") {
		t.Errorf("a --set-file that is not an object: %q", errs)
	}
	if errs := fork(ExitUsage, bad, "--set", "novalue"); !strings.Contains(errs, "want PATH=VALUE") {
		t.Errorf("--set without =: %q", errs)
	}
}

// TestForkPastTheLastCall: a fork frame with no model call at or after it
// is a usage error (exit 2) naming the frame, not a failed run.
func TestForkPastTheLastCall(t *testing.T) {
	dir := sampleTapes(t)
	_, errs := wantCode(t, ExitUsage, "fork", filepath.Join(dir, "agent-run.jbx"), "--frame", "97", "--no-booth", "--model", "x")
	if !strings.Contains(errs, "no model call at or after frame 97") {
		t.Errorf("stderr: %s", errs)
	}
}

// TestForkSystemPromptFile: --system-prompt-file gives the file's text
// without the final newline an editor adds (LF or CRLF), so a prompt
// written back as it was recorded asks the same; a newline before the
// last stays.
func TestForkSystemPromptFile(t *testing.T) {
	work, fork := demoForker(t)
	for i, c := range []struct{ file, want string }{
		{"Be terse.\n", "Be terse."},
		{"Be terse.\r\n", "Be terse."},
		{"Be terse.\n\nAlways.\n\n", "Be terse.\n\nAlways.\n"},
		{"Be terse.", "Be terse."},
	} {
		prompt := filepath.Join(work, fmt.Sprintf("prompt-%d.txt", i))
		must(t, os.WriteFile(prompt, []byte(c.file), 0o644))
		tape := filepath.Join(work, fmt.Sprintf("fork-%d.jbx", i))
		fork(ExitOK, tape, "--system-prompt-file", prompt)
		start, err := engine.FirstRunStart(openTape(t, tape))
		must(t, err)
		var over engine.Overrides
		must(t, json.Unmarshal(start.Parent.Overrides, &over))
		if over.SystemPrompt == nil || *over.SystemPrompt != c.want {
			t.Errorf("file %q: system prompt %q on the tape, want %q", c.file, deref(over.SystemPrompt), c.want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// demoForker records the demo in a new folder and returns the folder and
// a fork of its tape at frame 1 outside the booth, against a scripted
// model, into tape with the flags given: its stderr, the exit code wanted.
func demoForker(t *testing.T) (string, func(code int, tape string, more ...string) string) {
	t.Helper()
	testenv.RequirePython(t)
	work := t.TempDir()
	out, _ := wantCode(t, ExitOK, "demo", "--no-play", "--json", "--dir", work)
	var demo struct{ Tape string }
	must(t, json.Unmarshal([]byte(out), &demo))
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	return work, func(code int, tape string, more ...string) string {
		args := append([]string{"fork", "--no-booth", "--frame", "1", "--upstream", "openai=" + srv.OpenAIBaseURL(), "-o", tape}, more...)
		_, errs := wantCode(t, code, append(args, demo.Tape)...)
		return errs
	}
}
