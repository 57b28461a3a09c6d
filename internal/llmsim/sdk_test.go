package llmsim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// sdkAgent is one real-client agent in testdata/agents and what it must print.
type sdkAgent struct {
	name, model string
	argv        []string
	needsNode   bool
	want        []string
}

// poemFor returns the poem the bundled script makes model write.
func poemFor(t *testing.T, model string) string {
	t.Helper()
	c := &conversation{api: apiChat, model: model, user: "Write a short poem"}
	srv := New(DefaultScript())
	a := srv.answerFor(c)
	if a.fail != nil { // demo-flaky: a rule with "times" fails first
		a = srv.answerFor(c)
	}
	if len(a.calls) != 1 || a.calls[0].name != "write_file" {
		t.Fatalf("demo script: %s does not write a poem: %+v", model, a)
	}
	var args struct{ Content string }
	if err := json.Unmarshal([]byte(a.calls[0].args), &args); err != nil {
		t.Fatal(err)
	}
	return args.Content
}

// TestSDKAgents runs the official openai and @anthropic-ai/sdk clients and a
// stdlib-only Python agent against a live server, and checks what they print
// and the files their tool loops write. The npm agents need Node.js and
// the npm packages (testenv.RequireNode; JUKEBOX_SKIP_SDK=1 skips them),
// the Python ones python3.
func TestSDKAgents(t *testing.T) {
	t.Parallel()
	agents, err := filepath.Abs(filepath.Join("..", "..", "testdata", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := Start("127.0.0.1:0", DefaultScript())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // after the parallel subtests
	finalLine := func(lines int, model string) string {
		return "final: Done. I wrote poem.txt, read it back, and it has " + string(rune('0'+lines)) + " lines. (" + model + ")"
	}
	common := []string{"stream: One, two, three, four, five. That is the whole side.",
		`tool: read_file {"path":"poem.txt"}`, `tool: run_shell {"command":"wc -l < poem.txt"}`}
	for _, a := range []sdkAgent{
		{"openai", "demo-large", []string{"node", filepath.Join(agents, "openai_agent.mjs")}, true, append([]string{
			"models: demo-flaky demo-large demo-small text-embedding-3-small",
			"chat: Hello from demo-large! The needle is on the record.",
			"responses: Hello from demo-large! The needle is on the record.",
			"responses stream: One, two, three, four, five. That is the whole side.",
			"embeddings: 1536 dims",
			"say: I'll write the poem to poem.txt first.",
			finalLine(4, "demo-large")}, common...)},
		{"anthropic", "demo-small", []string{"node", filepath.Join(agents, "anthropic_agent.mjs")}, true, append([]string{
			"messages: Hello from demo-small! The needle is on the record.",
			"count_tokens: ok",
			finalLine(2, "demo-small")}, common...)},
		// demo-flaky answers its first request with a 429: the SDK must
		// read the error and retry.
		{"openai-retry", "demo-flaky", []string{"node", filepath.Join(agents, "openai_agent.mjs")}, true, []string{
			"chat: Hello from demo-flaky! The needle is on the record.", finalLine(2, "demo-flaky")}},
		{"python", "demo-large", []string{"python3", filepath.Join(agents, "..", "..", "internal", "demo", "agent.py")}, false, append([]string{
			"chat: Hello from demo-large! The needle is on the record.",
			finalLine(4, "demo-large")}, common...)},
		{"python-other-model", "other-model", []string{"python3", filepath.Join(agents, "..", "..", "internal", "demo", "agent.py")}, false, []string{
			"say: Writing the poem now.", finalLine(2, "other-model")}},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			if a.needsNode {
				testenv.RequireNode(t)
			} else {
				a.argv = append([]string{testenv.RequirePython(t)}, a.argv[1:]...)
			}
			runAgent(t, srv, a)
		})
	}
}

func runAgent(t *testing.T, srv *Server, a sdkAgent) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.argv[0], a.argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(agentEnv(),
		"OPENAI_BASE_URL="+srv.OpenAIBaseURL(), "OPENAI_API_KEY=sk-llmsim-test",
		"ANTHROPIC_BASE_URL="+srv.AnthropicBaseURL(), "ANTHROPIC_API_KEY=sk-ant-llmsim-test",
		"AGENT_MODEL="+a.model)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", a.name, err, stdout.String(), stderr.String())
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(stdout.String(), "\n") {
		lines[l] = true
	}
	for _, w := range a.want {
		if !lines[w] {
			t.Errorf("output lacks line %q\nstdout:\n%s", w, stdout.String())
		}
	}
	poem, err := os.ReadFile(filepath.Join(dir, "poem.txt"))
	if err != nil || string(poem) != poemFor(t, a.model) {
		t.Errorf("poem.txt = %q (%v), want %q", poem, err, poemFor(t, a.model))
	}
}

// agentEnv is the test's environment without any provider settings, so a
// developer's real keys and base URLs never reach an agent.
func agentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "AGENT_") {
			env = append(env, kv)
		}
	}
	return env
}
