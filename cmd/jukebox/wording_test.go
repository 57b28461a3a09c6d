package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestEngineErrorsInFlagWords: an engine error about an option is printed
// in the CLI's words, naming the flag, however it was wrapped or joined,
// and it keeps its identity and exit code.
func TestEngineErrorsInFlagWords(t *testing.T) {
	t.Parallel()
	other := errors.New("booth rollback: disk full")
	err := errors.Join(fmt.Errorf("fork: %w", engine.ErrNoAsk), other)
	var out bytes.Buffer
	code := report(&out, err)
	want := "jukebox: fork: booth: --commit ask needs a terminal to ask on\nbooth rollback: disk full\n"
	if out.String() != want || code != ExitInternal {
		t.Errorf("report printed %q, exit %d; want %q, exit %d", out.String(), code, want, ExitInternal)
	}
	if w := inFlagWords(err); !errors.Is(w, engine.ErrNoAsk) || !errors.Is(w, other) {
		t.Error("the reworded error lost what it wraps")
	}
	if plain := errors.New("no upstream for openai"); inFlagWords(plain) != plain {
		t.Error("an error naming no option was changed")
	}
}
