package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// mcpEchoServer is a stdio MCP server: it answers initialize and
// tools/call (echoing the text it is given), one JSON line each.
const mcpEchoServer = `import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}
    else:
        r = {"content": [{"type": "text", "text": "echo: " + m["params"]["arguments"]["text"]}]}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`

// mcpEchoAgent calls the echo server's tool with argv[1], through jukebox
// mcp, or, with argv[2] == "direct", by starting the server itself.
const mcpEchoAgent = `import json, os, subprocess, sys
server = [sys.executable, os.environ["ECHO_SERVER"]]
cmd = server if sys.argv[2:] == ["direct"] else [os.environ["JUKEBOX_BIN"], "mcp", "--name", "echo", "--"] + server
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def ask(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
r = ask(2, "tools/call", {"name": "echo", "arguments": {"text": sys.argv[1]}})
print(r["result"]["content"][0]["text"] if "result" in r else "error")
p.stdin.close()
p.wait()
`

// TestMCPReplayVerdict is issue 31's "an MCP request missing from the
// tape is not part of the replay verdict or exit code", and "replay
// --strict ... exits 0 with stdout identical" when the server was not
// answered from the tape: a request the tape does not hold makes the
// replay exit 5 (it was answered with an error); a recorded session that
// no jukebox mcp of the replay asked for (the agent started the server
// itself, as one whose client stripped the run's variables would when the
// run cannot be found) fails --strict, naming the session.
func TestMCPReplayVerdict(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	dir := t.TempDir()
	server, agent := filepath.Join(dir, "server.py"), filepath.Join(dir, "agent.py")
	must(t, os.WriteFile(server, []byte(mcpEchoServer), 0o644))
	must(t, os.WriteFile(agent, []byte(mcpEchoAgent), 0o644))
	tape := filepath.Join(dir, "echo.jbx")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(jukeboxBin(), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), "ECHO_SERVER="+server)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run("record", "-o", tape, "--", py, agent, "hello"); code != ExitOK || !strings.Contains(out, "echo: hello") {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	if out, code := run("replay", "--strict", tape, "--", py, agent, "hello"); code != ExitOK || strings.Contains(out, "If it does call a model") {
		t.Fatalf("replay --strict of the same run: exit %d\n%s", code, out)
	}
	out, code := run("replay", tape, "--", py, agent, "goodbye")
	if code != ExitDiverged || !strings.Contains(out, "1 MCP requests the tape does not hold") {
		t.Fatalf("replay with a tool call the tape does not hold: exit %d, want %d\n%s", code, ExitDiverged, out)
	}
	out, code = run("replay", "--strict", tape, "--", py, agent, "hello", "direct")
	if code != ExitDiffers || !strings.Contains(out, "recorded MCP sessions not answered from the tape (echo#1)") {
		t.Fatalf("replay --strict with the server started outside jukebox mcp: exit %d, want %d\n%s", code, ExitDiffers, out)
	}
}
