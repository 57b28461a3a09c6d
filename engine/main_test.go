package engine_test

import (
	"os"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
)

// TestMain lets the test binary serve as the booth's namespace init, which
// re-executes the running binary, as the chat client agent that
// shortchat_test.go records, and as agentleaves_test.go's agent.
func TestMain(m *testing.M) {
	sandbox.MaybeRunInit()
	sandbox.UseInit(testenv.BoothInit())
	netEchoChild()
	if os.Getenv(chatPlanEnv) != "" {
		os.Exit(chatClient())
	}
	if os.Getenv(leaverEnv) != "" {
		os.Exit(leaverAgent())
	}
	testenv.PythonFirstOnPath()
	// The booth's journal key goes to a state home of the tests' own.
	state, _ := os.MkdirTemp("", "jukebox-state-")
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}
