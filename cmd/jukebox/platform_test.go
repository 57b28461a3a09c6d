package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
)

// offLinux makes the CLI answer as it does on a platform without the
// Shadow Booth, for the rest of the test.
func offLinux(t *testing.T) {
	prev := boothSupported
	boothSupported = func() error { return &sandbox.UnsupportedError{GOOS: "darwin", GOARCH: "arm64"} }
	t.Cleanup(func() { boothSupported = prev })
}

const noBoothHere = "the Shadow Booth needs Linux (user and mount namespaces, overlayfs); this is darwin/arm64"

// TestBoothUnsupported: every command that would use the booth exits 2
// before anything starts, with the reason and what to do instead.
func TestBoothUnsupported(t *testing.T) {
	offLinux(t)
	tape := filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"record", "--booth", "--", "true"}, ": run without --booth"},
		{[]string{"record", "--booth", "--commit", "always", "--", "true"}, ": run without --booth"},
		{[]string{"replay", tape, "--booth"}, ": run without --booth"},
		{[]string{"fork", tape, "--frame", "3"}, ": fork runs in it by default: pass --no-booth to fork outside it"},
		{[]string{"booth", "status", "-C", t.TempDir()}, ": jukebox booth has nothing to work on here"},
		{[]string{"booth", "rollback", "-C", t.TempDir()}, ": jukebox booth has nothing to work on here"},
	} {
		_, errs := wantCode(t, ExitUsage, c.args...)
		if !strings.Contains(errs, noBoothHere+c.hint) {
			t.Errorf("jukebox %s: stderr %q, want %q", strings.Join(c.args, " "), errs, noBoothHere+c.hint)
		}
	}
}

// TestNoBoothStillValid: without the booth the same commands pass their
// checks on such a platform.
func TestNoBoothStillValid(t *testing.T) {
	offLinux(t)
	tape := filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")
	for name, v := range map[string]interface{ Validate() error }{
		"record":          &RecordCmd{Cmd: []string{"true"}, boothFlags: boothFlags{Commit: "ask", BoothMode: "auto"}},
		"replay":          &ReplayCmd{Tape: tape, Speed: "instant", boothFlags: boothFlags{Commit: "ask", BoothMode: "auto"}},
		"fork --no-booth": &ForkCmd{Tape: tape, Frame: 3, NoBooth: true},
		"play":            &PlayCmd{Tapes: []string{tape}},
	} {
		if err := v.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPlayForkUnsupported: a fork from the turntable, which runs in the
// booth unless --no-booth, is refused with the reason (the fork form
// shows it) before anything is written.
func TestPlayForkUnsupported(t *testing.T) {
	offLinux(t)
	tape := filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")
	fo := &engine.ForkOptions{Parent: tape}
	err := (&PlayCmd{Tapes: []string{tape}}).prepareFork(fo)
	want := noBoothHere + ": restart with jukebox play --no-booth to fork outside it"
	if err == nil || err.Error() != want || fo.Tape != "" || fo.Booth != nil {
		t.Fatalf("prepareFork: %v (tape %q, booth %v), want %q", err, fo.Tape, fo.Booth, want)
	}
}

// TestDoctorUnsupported: doctor says the booth is unavailable and why.
func TestDoctorUnsupported(t *testing.T) {
	prev := probeBooth
	probeBooth = func(context.Context, string) sandbox.Capabilities {
		return sandbox.Capabilities{Wazero: "v1.12.0", Unsupported: noBoothHere}
	}
	t.Cleanup(func() { probeBooth = prev })
	out, _ := wantCode(t, ExitOK, "doctor")
	if !strings.HasPrefix(out, "booth            unavailable: "+noBoothHere+"\n") || !strings.Contains(out, "booth exec mode  none\n") {
		t.Fatalf("doctor: %q", out)
	}
	out, _ = wantCode(t, ExitOK, "doctor", "--json")
	if !strings.Contains(out, `"unsupported": "`+noBoothHere+`"`) {
		t.Fatalf("doctor --json: %q", out)
	}
}
