package main

import (
	"os"
	"testing"

	"github.com/jukebox-os/jukebox/internal/termquiet"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
)

// mainEnv, set in a test's child process, makes the test binary run
// jukebox's main with its arguments, so tests can signal a real jukebox
// process.
const mainEnv = "JUKEBOX_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	termquiet.Restore() // as main does first
	// In-process booth runs re-execute this binary as the namespace init.
	sandbox.MaybeRunInit()
	sandbox.UseInit(testenv.BoothInit())
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	testenv.PythonFirstOnPath()
	// The booth's journal key goes to a state home of the tests' own.
	state, _ := os.MkdirTemp("", "jukebox-state-")
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
