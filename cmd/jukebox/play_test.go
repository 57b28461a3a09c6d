package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/tui"
)

// TestPlayNeedsATerminal: with stdout a pipe or file, play refuses with
// exit 2 and points at jukebox show.
func TestPlayNeedsATerminal(t *testing.T) {
	var out bytes.Buffer
	c := &PlayCmd{Tapes: []string{"../../testdata/tapes/agent-run.jbx"}, Theme: "diner"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	err := c.Run(t.Context(), &Env{Stdout: &out, Stderr: &out})
	if err == nil || codeFor(err) != ExitUsage || !strings.Contains(err.Error(), "jukebox show") {
		t.Fatalf("play to a buffer: %v (exit %d)", err, codeFor(err))
	}
}

func TestPlayValidate(t *testing.T) {
	c := &PlayCmd{Tapes: []string{"a", "b", "c"}}
	if err := c.Validate(); err == nil {
		t.Fatal("three tapes accepted")
	}
	// A bad --upstream is refused while kong reads the command line
	// (upstreamsMapper), before Validate.
	code, _, errs := jb(t, "play", "--upstream", "nonsense", "../../testdata/tapes/agent-run.jbx")
	if code != ExitUsage || !strings.Contains(errs, "--upstream") {
		t.Fatalf("a bad --upstream accepted: exit %d\n%s", code, errs)
	}
	// --frame past the tape's end, or below 0, names the range.
	for _, f := range []string{"98", "-1"} {
		code, _, errs = jb(t, "play", "--frame="+f, "../../testdata/tapes/agent-run.jbx")
		if code != ExitUsage || !strings.Contains(errs, "has frames 0 to 97") {
			t.Errorf("--frame %s: exit %d\n%s", f, code, errs)
		}
	}
}

// TestPlayNoColor: under NO_COLOR the turntable keeps bold and reverse
// video (the needle's row is marked) and gives no colour at all.
func TestPlayNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	r := playRenderer(&bytes.Buffer{}, true)
	got := r.NewStyle().Bold(true).Reverse(true).Render("needle")
	if !strings.Contains(got, "\x1b[1;7m") {
		t.Errorf("bold and reverse dropped under NO_COLOR: %q", got)
	}
	plain := tui.NewStyles(themes.Plain(), r)
	if s := plain.Title.Render("x"); strings.Contains(s, "38;") || strings.Contains(s, "[3") {
		t.Errorf("a colour under NO_COLOR: %q", s)
	}
}

// TestPlayColours: NO_COLOR takes the colour out of the default theme, not
// out of a theme named with --theme; --background (or JUKEBOX_BACKGROUND)
// overrides the terminal's answer (issue 33: NO_COLOR overrode an explicit
// --theme and nothing overrode the background).
func TestPlayColours(t *testing.T) {
	env := func(vars ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(vars); i += 2 {
				if vars[i] == k {
					return vars[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		theme, noColor, want string
	}{{"", "", "diner"}, {"", "1", "plain"}, {"diner", "1", "diner"}, {"high-contrast", "1", "high-contrast"}, {"plain", "", "plain"}} {
		th, _, err := playColours(&bytes.Buffer{}, c.theme, "", env("NO_COLOR", c.noColor))
		if err != nil || th.Name != c.want {
			t.Errorf("--theme %q, NO_COLOR=%q: theme %q (%v), want %q", c.theme, c.noColor, th.Name, err, c.want)
		}
	}
	for _, bg := range []string{"light", "dark"} {
		_, r, err := playColours(&bytes.Buffer{}, "", bg, env())
		if err != nil || r.HasDarkBackground() != (bg == "dark") {
			t.Errorf("--background %s: dark %v (%v)", bg, r.HasDarkBackground(), err)
		}
	}
	tape := "../../testdata/tapes/agent-run.jbx"
	if code, _, errs := jb(t, "play", "--theme", "neon", tape); code != ExitUsage || !strings.Contains(errs, "--theme") {
		t.Errorf("--theme neon: exit %d\n%s", code, errs)
	}
	t.Setenv("JUKEBOX_BACKGROUND", "grey")
	if code, _, errs := jb(t, "play", tape); code != ExitUsage || !strings.Contains(errs, "JUKEBOX_BACKGROUND") {
		t.Errorf("JUKEBOX_BACKGROUND=grey: exit %d\n%s", code, errs)
	}
	if !inMultiplexer(env("TERM", "tmux-256color")) || !inMultiplexer(env("TERM", "screen")) || inMultiplexer(env("TERM", "xterm")) {
		t.Error("inMultiplexer does not tell tmux and screen from xterm")
	}
}
