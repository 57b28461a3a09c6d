package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestKeymapRebinds: an action bound in a keys file takes its new keys in
// place of its own, on the timelines and the deck, and the help says so.
func TestKeymapRebinds(t *testing.T) {
	o := testOptions()
	o.Keys = Keymap{"next_step": {"J"}, "quit": {"Q"}, "command": {"alt+;"}}
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tl := d.tracks[0].tl
	press(d, runes("L")) // its own key no longer
	if cursor(d) != 0 {
		t.Errorf("L moved the needle to %d after next_step was bound to J", cursor(d))
	}
	press(d, runes("J"))
	if want := tl.StepStart(1); cursor(d) != want {
		t.Errorf("J put the needle on %d, want %d", cursor(d), want)
	}
	if _, cmd := d.Update(runes("Q")); cmd == nil || cmd() != tea.Quit() {
		t.Error("Q does not quit")
	}
	press(d, runes("?"))
	if v := d.View(); !strings.Contains(v, "J") || strings.Contains(v, "⇧→/L") {
		t.Errorf("the help does not show the new key:\n%s", v)
	}
}

// TestHelpSaysItsOwnKey: with help bound to q (quit to Q), the open help
// said "?/esc closes this help", and ? did nothing.
func TestHelpSaysItsOwnKey(t *testing.T) {
	o := testOptions()
	o.Keys = Keymap{"quit": {"Q"}, "help": {"q"}}
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	press(d, runes("q"))
	if v := d.View(); !strings.Contains(v, "q/esc closes this help") {
		t.Errorf("the open help does not name its key:\n%s", v)
	}
	press(d, runes("q"))
	if d.help.ShowAll {
		t.Error("q did not close the help")
	}
}

// TestLoadKeymapErrors: what a keys file gets wrong is said with the file,
// the line and the action.
func TestLoadKeymapErrors(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"{\n\"next_step\": [\"J\"],\n\"bogus\": [\"x\"]\n}":  "k.json:3: bogus: no such action (actions: check, command",
		"{\n\"next_step\": [\"n\"]\n}":                       "k.json:2: next_step: \"n\" is next_llm's key too",
		"{\n\"next_step\": []\n}":                            "k.json:2: next_step: no key given",
		"{\n\"next_step\": [\"ctl+j\"]\n}":                   "k.json:2: next_step: \"ctl+j\" is no key a terminal sends",
		"{\n\"next_step\": \"J\"\n}":                         "k.json:2: each action takes a list of keys",
		"{\n\"next_step\": [\"J\"],\n}":                      "k.json:3: invalid character",
		"[\"J\"]":                                            "k.json:1:",
		"{\"quit\": [\"Q\"], \"help\": [\"alt+h\", \"f1\"]}": "",
	} {
		p := filepath.Join(dir, "k.json")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		km, err := LoadKeymap(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", text, err)
		case want == "" && len(km) != 2:
			t.Errorf("%q: read %v", text, km)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want %q in it", text, err, want)
		}
	}
}

// TestKeyActionsDocumented: docs/turntable.md names every action a keys
// file can bind.
func TestKeyActionsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "turntable.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range KeyActions() {
		if !strings.Contains(string(b), "`"+a.Name+"`") {
			t.Errorf("docs/turntable.md does not list the action %s (%s)", a.Name, a.What)
		}
	}
}
