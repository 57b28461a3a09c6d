package main

import (
	"os"
	"testing"
)

// mainEnv, set in a test's child process, makes the test binary run
// jukebox's main with its arguments, so tests can signal a real jukebox
// process.
const mainEnv = "JUKEBOX_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}
