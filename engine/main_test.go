package engine_test

import (
	"os"
	"testing"

	"github.com/jukebox-os/jukebox/sandbox"
)

// TestMain lets the test binary serve as the booth's namespace init, which
// re-executes the running binary.
func TestMain(m *testing.M) {
	sandbox.MaybeRunInit()
	os.Exit(m.Run())
}
