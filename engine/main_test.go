package engine_test

import (
	"os"
	"testing"

	"github.com/jukebox-os/jukebox/sandbox"
)

// TestMain lets the test binary serve as the booth's namespace init, which
// re-executes the running binary, and as the chat client agent that
// shortchat_test.go records.
func TestMain(m *testing.M) {
	sandbox.MaybeRunInit()
	if os.Getenv(chatPlanEnv) != "" {
		os.Exit(chatClient())
	}
	os.Exit(m.Run())
}
