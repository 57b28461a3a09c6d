package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// mcpAgentRun runs jukebox (this test binary) with args in dir; the MCP
// agent finds jukebox mcp through JUKEBOX_BIN, bin.
func mcpAgentRun(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	cmd := jukeboxCmd(t.Context(), dir, args...)
	cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+bin, "OPENAI_API_KEY=sk-test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jukebox %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestMCPRecordReplayAndBooth: an agent using the official MCP SDK client
// with the official everything and filesystem servers, each started
// through jukebox mcp. Recorded: every message is on the run's tape, by
// server and session. Replayed: the agent gets the same answers and
// prints the same, with no server started (the filesystem server's write
// does not happen again). In the booth: the filesystem server runs inside
// it, so a rollback leaves its directory untouched.
func TestMCPRecordReplayAndBooth(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	self := jukeboxBin()
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	agent := filepath.Join(agents, "mcp_agent.mjs")
	out := mcpAgentRun(t, ws, self, "record", "-o", "rec.jbx", "--", "node", agent, data)
	for _, want := range []string{"echo: Echo: hello from the agent", "sum: The sum of 2 and 40 is 42.", "read: written through MCP"} {
		if !strings.Contains(out, want) {
			t.Errorf("the recorded run did not print %q:\n%s", want, out)
		}
	}
	tp := openTape(t, filepath.Join(ws, "rec.jbx"))
	sessions := map[string]int{}
	calls := 0
	for f, err := range tp.Frames(tapefmt.KindMCP) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		m := p.(*tapefmt.MCPMessage)
		if m.Direction == tapefmt.MCPStart {
			sessions[m.Server] = m.Session
		}
		if m.Direction == tapefmt.MCPToServer && strings.Contains(string(m.Message), `"tools/call"`) {
			calls++
		}
	}
	tp.Close()
	if sessions["everything"] != 1 || sessions["filesystem"] != 1 || calls != 5 {
		t.Errorf("sessions %v, tools/call %d: want one session of each server and 5 calls", sessions, calls)
	}

	must(t, os.Remove(filepath.Join(data, "note.txt")))
	out = mcpAgentRun(t, ws, self, "replay", "rec.jbx")
	if !strings.Contains(out, "stdout identical to the recording") || strings.Contains(out, "Secure MCP Filesystem Server running") {
		t.Errorf("replay:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Error("the replay started the filesystem server: its write happened again")
	}

	// The booth's /tmp is private: what the agent runs (node_modules, this
	// binary) goes into the workspace, linked where the file system lets.
	booth := t.TempDir()
	linkNodeModules(t, agents, filepath.Join(booth, "agents", "node_modules"), "@modelcontextprotocol/sdk", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything")
	linkTree(t, agent, filepath.Join(booth, "agents", "mcp_agent.mjs"))
	linkTree(t, self, filepath.Join(booth, "bin", "jukebox"))
	bdata := filepath.Join(booth, "data")
	must(t, os.Mkdir(bdata, 0o755))
	out = mcpAgentRun(t, booth, filepath.Join(booth, "bin", "jukebox"), "record", "--booth", "--commit", "never", "-o", filepath.Join(booth, "booth.jbx"),
		"--", "node", filepath.Join(booth, "agents", "mcp_agent.mjs"), bdata)
	if !strings.Contains(out, "write: Successfully wrote") || !strings.Contains(out, "write data/note.txt") || !strings.Contains(out, "booth rolled back") {
		t.Errorf("booth run:\n%s", out)
	}
	if ents, _ := os.ReadDir(bdata); len(ents) != 0 {
		t.Errorf("the rollback left %v in the server's directory", ents)
	}
}

// TestMCPOutbox: under a booth policy that holds the filesystem server's
// write_file, the agent's call is answered as pending and nothing is
// written in the booth. The held call runs outside the booth only with a
// person's yes: --commit always and --commit never drop it (its command
// line and the policy came from inside the booth); --commit ask shows it,
// with the command that would run it, and a yes runs it for real, with
// its idempotency key.
func TestMCPOutbox(t *testing.T) {
	ws, data, record := outboxSetup(t)
	for _, commit := range []string{"never", "always"} {
		out, err := record(commit).CombinedOutput()
		if err != nil {
			t.Fatalf("--commit %s: %v\n%s", commit, err, out)
		}
		if !strings.Contains(string(out), "write: jukebox: write_file is held in the booth's outbox") {
			t.Errorf("--commit %s: the agent was not told its call is held:\n%s", commit, out)
		}
		// write_file declares an output schema: the held answer is still
		// no error (models read an error as a failure, and retry).
		if !strings.Contains(string(out), "write is an error: false") {
			t.Errorf("--commit %s: the held call's answer is an error:\n%s", commit, out)
		}
		if commit == "always" && !strings.Contains(string(out), "only with a person's yes to the commit") {
			t.Errorf("--commit always: the held call was not dropped with its reason:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
			t.Fatalf("--commit %s: a held call ran without a person's yes", commit)
		}
	}

	// --commit ask on a terminal: the question shows the held call and the
	// command that runs it; y runs it.
	q, out := answerAsk(t, record("ask"), "y\n")
	if !strings.Contains(q, "write_file") || !strings.Contains(q, "OUTSIDE the booth") || !strings.Contains(q, "by running:") {
		t.Errorf("the question:\n%s", q)
	}
	if !strings.Contains(out, "outbox: filesystem write_file ran after the commit") {
		t.Errorf("--commit ask, y:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(data, "note.txt")); err != nil || string(b) != "written through MCP" {
		t.Errorf("after the commit: note.txt %q, %v", b, err)
	}
	tp := openTape(t, filepath.Join(ws, "ask.jbx"))
	defer tp.Close()
	keyed := false
	for f, err := range tp.Frames(tapefmt.KindMCP) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		if m := p.(*tapefmt.MCPMessage); m.Direction == tapefmt.MCPToServer && strings.Contains(string(m.Message), "io.jukebox/idempotency-key") {
			keyed = true
		}
	}
	if !keyed {
		t.Error("the commit's tools/call, with its idempotency key, is not on the tape")
	}
}

// nthRequest is the frame of the tape's nth llm.request, from 1.
func nthRequest(t *testing.T, tape string, nth int) uint64 {
	t.Helper()
	tp := openTape(t, tape)
	defer tp.Close()
	n := 0
	for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
		must(t, err)
		if n++; n == nth {
			return f.Seq
		}
	}
	t.Fatalf("%s: no llm.request number %d", tape, nth)
	return 0
}

// startEverythingHTTP starts the official everything MCP server over
// streamable HTTP on a free port (its /mcp), until stop or the test's end.
func startEverythingHTTP(t *testing.T, agents string) (port string, stop func()) {
	t.Helper()
	port = freePort(t)
	server := exec.CommandContext(t.Context(), "node", filepath.Join(agents, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp")
	server.Env = append(os.Environ(), "PORT="+port)
	stderr, err := server.StderrPipe()
	must(t, err)
	must(t, server.Start())
	var once sync.Once
	stop = func() { once.Do(func() { server.Process.Kill(); server.Wait() }) }
	t.Cleanup(stop)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on port") {
	}
	go io.Copy(io.Discard, stderr)
	return port, stop
}

// outboxSetup is a workspace for the official filesystem server's agent
// (mcp_agent.mjs) with a policy of the user's (record --mcp-policy, read by
// record and by jukebox mcp in the booth) that holds write_file for the
// commit and names the server's command, and
// a record of it there in the booth with --commit commit.
func outboxSetup(t *testing.T) (ws, data string, record func(commit string, args ...string) *exec.Cmd) {
	agents := testenv.RequireNode(t)
	requireConfinedBooth(t)
	t.Parallel()
	self := jukeboxBin()
	ws = t.TempDir() // the booth's /tmp is private: what it runs goes into the workspace
	linkNodeModules(t, agents, filepath.Join(ws, "agents", "node_modules"), "@modelcontextprotocol/sdk", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything")
	linkTree(t, filepath.Join(agents, "mcp_agent.mjs"), filepath.Join(ws, "agents", "mcp_agent.mjs"))
	linkTree(t, self, filepath.Join(ws, "bin", "jukebox"))
	data = filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	// The user's policy names the filesystem server's command line as the
	// agent starts it: only then may a call held in the booth run on the
	// host at the commit. Record reads it before the agent starts (in the
	// workspace, since the booth's /tmp is private).
	node, err := exec.Command("node", "-p", "process.execPath").Output()
	must(t, err)
	command, _ := json.Marshal([]string{strings.TrimSpace(string(node)),
		filepath.Join(ws, "agents", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"), data})
	policy := filepath.Join(ws, "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"servers": {"filesystem": {"command": `+string(command)+`, "tools": {"write_file": "outbox"}}}}`), 0o644))
	// Given as record's flag (the tests of the other MCP agents give it as
	// the variable): it used to reach record alone, not the jukebox mcp
	// the agent starts, which then ran every call at once.
	record = func(commit string, args ...string) *exec.Cmd {
		all := append([]string{"record", "--booth", "--commit", commit, "--mcp-policy", policy, "-o", filepath.Join(ws, commit+".jbx")}, args...)
		cmd := jukeboxCmd(t.Context(), ws, append(all, "--", "node", filepath.Join(ws, "agents", "mcp_agent.mjs"), data)...)
		cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+filepath.Join(ws, "bin", "jukebox"))
		return cmd
	}
	return ws, data, record
}

// TestMCPOutboxKept: a run whose booth is kept keeps its held MCP calls
// with the transaction (in its authenticated record), and jukebox booth
// commit offers them: shown, and run after the commit on a yes on the
// terminal; --drop-outbox drops them without asking. (A kept booth used
// to drop them.)
func TestMCPOutboxKept(t *testing.T) {
	ws, data, record := outboxSetup(t)
	out, err := record("never", "--keep").CombinedOutput()
	if err != nil {
		t.Fatalf("--keep: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "outbox: filesystem write_file kept with the transaction") {
		t.Fatalf("--keep:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Fatal("a held call ran at --keep")
	}
	q, got := answerAsk(t, jukeboxCmd(t.Context(), ws, "booth", "commit"), "y\n")
	if !strings.Contains(q, "write_file") || !strings.Contains(q, "OUTSIDE the booth") || !strings.Contains(q, "by running:") {
		t.Errorf("the question:\n%s", q)
	}
	if !strings.Contains(got, "committed ") || !strings.Contains(got, "outbox: filesystem write_file ran after the commit") {
		t.Errorf("booth commit, y:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(data, "note.txt")); err != nil || string(b) != "written through MCP" {
		t.Errorf("after the commit: note.txt %q, %v", b, err)
	}

	must(t, os.Remove(filepath.Join(data, "note.txt")))
	must(t, os.Remove(filepath.Join(ws, "never.jbx"))) // -o never overwrites
	out, err = record("never", "--keep").CombinedOutput()
	if err != nil {
		t.Fatalf("--keep again: %v\n%s", err, out)
	}
	out, err = jukeboxCmd(t.Context(), ws, "booth", "commit", "--drop-outbox").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "outbox: filesystem write_file dropped, never run") {
		t.Errorf("booth commit --drop-outbox: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Error("--drop-outbox ran the held call")
	}
}

// answerAsk runs cmd (a record --commit ask) on a terminal of its own and
// answers its question; it returns the question and what the run printed.
// The run must end well. Where the question asks for a code (held calls
// run outside the booth), a "y\n" answer types the code, as a person who
// says yes does.
func answerAsk(t *testing.T, cmd *exec.Cmd, answer string) (question, output string) {
	t.Helper()
	master, slave := openPTY(t)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	asked := make(chan string, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte("[y/N]")) || askedCode.Match(seen) || err != nil {
				asked <- string(seen)
				io.Copy(io.Discard, master)
				return
			}
		}
	}()
	select {
	case question = <-asked:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("no question on the terminal; output:\n%s", out.String())
	}
	if m := askedCode.FindStringSubmatch(question); m != nil && answer == "y\n" {
		answer = m[1] + "\n"
	}
	_, err := master.WriteString(answer)
	must(t, err)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("--commit ask: %v\n%s", err, out.String())
	}
	return question, out.String()
}

// askedCode finds the code a question asks for.
var askedCode = regexp.MustCompile(`type the code ([A-Z0-9]{4}-[A-Z0-9]{4})\b.*: `)

// TestMCPFork: a fork answers the MCP calls made before its fork point
// from the parent (the filesystem server does not write again) and starts
// the server live at the first call after it, replaying the client's
// handshake to it; that call reaches the real server.
func TestMCPFork(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	self := jukeboxBin()
	srv, _, err := llmsim.Start("127.0.0.1:0", llmsim.DefaultScript())
	must(t, err)
	defer srv.Close()
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	agent := filepath.Join(agents, "mcp_fork_agent.mjs")
	up := "openai=" + srv.OpenAIBaseURL()
	mcpAgentRun(t, ws, self, "record", "--upstream", up, "-o", "rec.jbx", "--", "node", agent, data)
	for _, f := range []string{"first.txt", "second.txt"} {
		must(t, os.Remove(filepath.Join(data, f)))
	}
	second := nthRequest(t, filepath.Join(ws, "rec.jbx"), 2)
	out := mcpAgentRun(t, ws, self, "fork", "rec.jbx", "--frame", fmt.Sprint(second), "--no-booth", "--model", "demo-small",
		"--upstream", up, "-o", "fork.jbx")
	if !strings.Contains(out, "files: live from here on") || !strings.Contains(out, "step 2: Successfully wrote") {
		t.Errorf("fork:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "first.txt")); err == nil {
		t.Error("the call before the fork point reached the server: first.txt was written again")
	}
	if _, err := os.Stat(filepath.Join(data, "second.txt")); err != nil {
		t.Errorf("the call after the fork point did not reach the server: %v", err)
	}
}

// TestMCPHTTP: jukebox mcp --url in front of the official everything
// server over the streamable HTTP transport, with the official SDK
// client: recorded under jukebox record, replayed with no server at all.
func TestMCPHTTP(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	self := jukeboxBin()
	ws := t.TempDir()
	agent := filepath.Join(agents, "mcp_http_agent.mjs")
	run := func(args ...string) string {
		cmd := jukeboxCmd(t.Context(), ws, args...)
		cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+self, "PORT="+freePort(t))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jukebox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("record", "-o", "http.jbx", "--", "node", agent)
	if !strings.Contains(out, "echo: Echo: over HTTP") || !strings.Contains(out, "sum: The sum of 20 and 22 is 42.") {
		t.Fatalf("record:\n%s", out)
	}
	tp := openTape(t, filepath.Join(ws, "http.jbx"))
	calls := 0
	for f, err := range tp.Frames(tapefmt.KindMCP) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		if m := p.(*tapefmt.MCPMessage); m.Direction == tapefmt.MCPFromServer && strings.Contains(string(m.Message), "The sum of 20 and 22") {
			calls++
		}
	}
	tp.Close()
	if calls != 1 {
		t.Errorf("the get-sum result is on the tape %d times, want once", calls)
	}
	out = run("replay", "http.jbx") // the agent starts no server in a replay
	if !strings.Contains(out, "stdout identical to the recording") {
		t.Errorf("replay:\n%s", out)
	}

	// jukebox record --mcp-url: the recorder serves the proxy itself and
	// the agent finds it in JUKEBOX_MCP_URL_EVERYTHING; the replay serves
	// it from the tape, the server gone.
	port, stop := startEverythingHTTP(t, agents)
	out = run("record", "--mcp-url", "everything=http://127.0.0.1:"+port+"/mcp?token=MCPSECRET4", "-o", "hosted.jbx", "--", "node", agent)
	stop()
	if !strings.Contains(out, "sum: The sum of 20 and 22 is 42.") {
		t.Fatalf("record --mcp-url:\n%s", out)
	}
	// A credential in the URL's query is not kept on the tape (it was, in
	// the server's start frame), as an upstream's is not.
	if shown := run("show", "--json", "hosted.jbx"); strings.Contains(shown, "MCPSECRET4") || !strings.Contains(shown, "127.0.0.1:"+port+"/mcp") {
		t.Errorf("the MCP server's URL on the tape:\n%s", shown)
	}
	out = run("replay", "hosted.jbx")
	if !strings.Contains(out, "stdout identical to the recording") {
		t.Errorf("replay of record --mcp-url:\n%s", out)
	}
	// A call the tape does not hold is named: the verdict said "named
	// above" of it, and nothing had named it.
	cmd := jukeboxCmd(t.Context(), ws, "replay", "hosted.jbx")
	cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+self, "ECHO_MESSAGE=changed")
	diverged, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != ExitDiverged || !strings.Contains(string(diverged), `mcp everything: replay: no recorded tools/call request with params {"name":"echo","arguments":{"message":"changed"}}`) {
		t.Errorf("replay of a changed MCP call: exit %d\n%s", cmd.ProcessState.ExitCode(), diverged)
	}
	if _, errs := wantCode(t, ExitUsage, "record", "--mcp-url", "everything", "--", "true"); !strings.Contains(errs, "want NAME=URL") {
		t.Errorf("a bad --mcp-url: %s", errs)
	}
	if _, errs := wantCode(t, ExitUsage, "fork", filepath.Join(ws, "hosted.jbx"), "--frame", "1", "--mcp-url", "everything"); !strings.Contains(errs, "want NAME=URL") {
		t.Errorf("a bad fork --mcp-url: %s", errs)
	}
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// linkNodeModules makes dst (a node_modules folder) hold the packages of
// agents' node_modules that roots need: the roots and what they depend
// on, resolved from agents' package-lock.json as node resolves them (a
// package's own node_modules, then its parents'). The whole folder is
// about 72,000 files, which took each test 2 s of CPU to link and remove.
func linkNodeModules(t *testing.T, agents, dst string, roots ...string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(agents, "package-lock.json"))
	must(t, err)
	type pkg struct {
		Dependencies, OptionalDependencies, PeerDependencies map[string]string
	}
	var lock struct{ Packages map[string]pkg }
	must(t, json.Unmarshal(data, &lock))
	need := map[string]bool{}
	// resolve finds name as a package at from (a path of the lock,
	// "node_modules/a/node_modules/b"; "" for the top) would: false when
	// it is not installed.
	var resolve func(from, name string) bool
	resolve = func(from, name string) bool {
		for dir := from; ; {
			p := "node_modules/" + name
			if dir != "" {
				p = dir + "/" + p
			}
			if pk, ok := lock.Packages[p]; ok {
				if !need[p] {
					need[p] = true
					for d := range pk.Dependencies {
						if !resolve(p, d) {
							t.Fatalf("package-lock.json: %s needs %s, which is not installed", p, d)
						}
					}
					for _, opt := range []map[string]string{pk.OptionalDependencies, pk.PeerDependencies} {
						for d := range opt {
							resolve(p, d) // linked when installed
						}
					}
				}
				return true
			}
			if dir == "" {
				return false
			}
			dir = dir[:max(strings.LastIndex(dir, "/node_modules/"), 0)]
		}
	}
	for _, r := range roots {
		if !resolve("", r) {
			t.Fatalf("package-lock.json: %s is not installed", r)
		}
	}
	// One cp a destination folder (dst, dst/@scope, a package's own
	// node_modules): a package inside another linked one comes with it.
	into := map[string][]string{}
	for p := range need {
		if i := strings.LastIndex(p, "/node_modules/"); i > 0 && need[p[:i]] {
			continue
		}
		rel := filepath.FromSlash(strings.TrimPrefix(p, "node_modules/"))
		to := filepath.Dir(filepath.Join(dst, rel))
		into[to] = append(into[to], filepath.Join(agents, "node_modules", rel))
	}
	for to, srcs := range into {
		var made []string
		for _, src := range srcs {
			made = append(made, filepath.Join(to, filepath.Base(src)))
		}
		copyLinked(t, made, append(srcs, to)...)
	}
}

// linkTree makes dst a copy of src (a file or a folder), hard-linking
// files where it can.
func linkTree(t *testing.T, src, dst string) {
	t.Helper()
	copyLinked(t, []string{dst}, src, dst)
}

// copyLinked runs cp with args (sources, then the destination), making
// made: hard links where it can, copies (cp -a, after removing what the
// links made) where the destination is on another file system.
func copyLinked(t *testing.T, made []string, args ...string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(made[0]), 0o755))
	if out, err := exec.Command("cp", append([]string{"-al"}, args...)...).CombinedOutput(); err != nil {
		for _, m := range made {
			os.RemoveAll(m)
		}
		if out, err = exec.Command("cp", append([]string{"-a"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestMCPHTTPPolicy: record --mcp-policy stages the tools/call requests
// to an --mcp-url server (the official everything server, over streamable
// HTTP) as jukebox mcp --policy stages a stdio server's: in the booth, a
// held call is answered as pending and never reaches the server; with a
// person's yes at the commit it runs over HTTP, its idempotency key sent,
// every message on the tape; outside the booth the call runs now, and
// jukebox says the policy could not hold it.
func TestMCPHTTPPolicy(t *testing.T) {
	agents := testenv.RequireNode(t)
	requireConfinedBooth(t)
	t.Parallel()
	ws := t.TempDir() // the booth's /tmp is private: the agent goes into the workspace
	linkNodeModules(t, agents, filepath.Join(ws, "agents", "node_modules"), "@modelcontextprotocol/sdk")
	linkTree(t, filepath.Join(agents, "mcp_http_agent.mjs"), filepath.Join(ws, "agents", "mcp_http_agent.mjs"))
	port, _ := startEverythingHTTP(t, agents)
	policy := filepath.Join(ws, "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"servers": {"everything": {"tools": {"echo": "outbox"}}}}`), 0o644))
	record := func(tape string, args ...string) *exec.Cmd {
		all := append([]string{"record", "--mcp-url", "everything=http://127.0.0.1:" + port + "/mcp", "--mcp-policy", policy, "-o", filepath.Join(ws, tape)}, args...)
		return jukeboxCmd(t.Context(), ws, append(all, "--", "node", filepath.Join(ws, "agents", "mcp_http_agent.mjs"))...)
	}
	answers := func(tape string) (policy, outbox []string) {
		tp := openTape(t, filepath.Join(ws, tape))
		defer tp.Close()
		for f, err := range tp.Frames(tapefmt.KindMCP) {
			must(t, err)
			p, err := f.Decode()
			must(t, err)
			m := p.(*tapefmt.MCPMessage)
			switch {
			case m.Problem == "answered by jukebox: the policy":
				policy = append(policy, string(m.Message))
			case strings.Contains(m.Problem, "the outbox, run at the commit"):
				outbox = append(outbox, string(m.Message))
			}
		}
		return policy, outbox
	}

	out, err := record("never.jbx", "--booth", "--commit", "never").CombinedOutput()
	if err != nil {
		t.Fatalf("--commit never: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "echo: jukebox: echo is held in the booth's outbox") || !strings.Contains(string(out), "sum: The sum of 20 and 22 is 42.") ||
		!strings.Contains(string(out), "outbox: everything echo dropped") {
		t.Errorf("--commit never:\n%s", out)
	}
	if held, ran := answers("never.jbx"); len(held) != 1 || len(ran) != 0 {
		t.Errorf("--commit never: %d policy answers, %d outbox messages on the tape", len(held), len(ran))
	}

	q, got := answerAsk(t, record("ask.jbx", "--booth", "--commit", "ask"), "y\n")
	if !strings.Contains(q, "echo") || !strings.Contains(q, "by calling the server at: http://127.0.0.1:"+port+"/mcp") {
		t.Errorf("the question:\n%s", q)
	}
	if !strings.Contains(got, "outbox: everything echo ran after the commit") {
		t.Errorf("--commit ask, y:\n%s", got)
	}
	_, ran := answers("ask.jbx")
	sent := strings.Join(ran, "\n")
	if !strings.Contains(sent, "io.jukebox/idempotency-key") || !strings.Contains(sent, "Echo: over HTTP") {
		t.Errorf("the commit's exchange on the tape:\n%s", sent)
	}

	out, err = record("plain.jbx").CombinedOutput()
	if err != nil {
		t.Fatalf("outside the booth: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "echo: Echo: over HTTP") || !strings.Contains(string(out), "the policy holds echo for the commit, but") {
		t.Errorf("outside the booth:\n%s", out)
	}
}

// TestMCPHTTPFork: a fork of a run whose agent used an --mcp-url server
// answers the MCP calls before its fork point from the parent's session
// and goes live at the first one after it: jukebox opens a session on the
// real server with the client's own handshake (recorded, not passed on)
// and the call reaches it. Before, the HTTP session was answered from the
// tape throughout, and a request the parent never made got an error.
func TestMCPHTTPFork(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	srv, _, err := llmsim.Start("127.0.0.1:0", llmsim.DefaultScript())
	must(t, err)
	defer srv.Close()
	port, stop := startEverythingHTTP(t, agents)
	ws := t.TempDir()
	up := "openai=" + srv.OpenAIBaseURL()
	run := func(args ...string) string {
		cmd := jukeboxCmd(t.Context(), ws, args...)
		cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-test")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jukebox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	agent := filepath.Join(agents, "mcp_http_fork_agent.mjs")
	out := run("record", "--mcp-url", "everything=http://127.0.0.1:"+port+"/mcp?token=MCPSECRET5", "--upstream", up, "-o", "rec.jbx", "--", "node", agent)
	if !strings.Contains(out, "step 2: The sum of") {
		t.Fatalf("record:\n%s", out)
	}
	// The tape keeps the URL without its token; the fork is given the
	// server's URL whole with --mcp-url, here another server's, the
	// recorded one gone: its live calls reach it.
	stop()
	port2, _ := startEverythingHTTP(t, agents)
	second := nthRequest(t, filepath.Join(ws, "rec.jbx"), 2)
	out = run("fork", "rec.jbx", "--frame", fmt.Sprint(second), "--no-booth", "--model", "demo-small", "--upstream", up,
		"--mcp-url", "everything=http://127.0.0.1:"+port2+"/mcp?token=MCPSECRET5", "-o", "fork.jbx", "--", "node", agent)
	if !strings.Contains(out, "mcp everything: live from here on") || !strings.Contains(out, "step 2: The sum of") {
		t.Fatalf("fork:\n%s", out)
	}
	fork := openTape(t, filepath.Join(ws, "fork.jbx"))
	defer fork.Close()
	var forkAt, handshake uint64
	handshakes := 0
	for f, err := range fork.All() {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			if forkAt == 0 && p.Call == 1 {
				forkAt = f.Seq
			}
		case *tapefmt.MCPMessage:
			if strings.Contains(p.Problem, "sent by jukebox again to the live server") && strings.Contains(string(p.Message), `"initialize"`) {
				handshakes++
				handshake = f.Seq
			}
		}
	}
	if handshakes != 1 || handshake < forkAt {
		t.Errorf("the live server's handshake: %d on the fork's tape, at frame %d; the fork point is frame %d", handshakes, handshake, forkAt)
	}
	for _, tape := range []string{"rec.jbx", "fork.jbx"} {
		if shown := run("show", "--json", tape); strings.Contains(shown, "MCPSECRET5") {
			t.Errorf("%s keeps the MCP server's token", tape)
		}
	}
}

// TestMCPInSDKTransaction: outside the booth, an MCP call the policy holds
// while the agent has a transaction of its own open (the Python SDK's
// begin, mcp_mode staged_acid) is held in that transaction: answered as
// pending, run when the agent commits (its answer lists the call, and the
// file is written), dropped when it rolls back.
// TestMCPReadOnlyTransactionRefusesWrites is issue 31's "mcp_mode=
// "read_only" runs writes at once": a call the policy holds as a write,
// made while a read_only transaction is open, is refused, and nothing is
// written, at the commit or before.
func TestMCPReadOnlyTransactionRefusesWrites(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	policy := filepath.Join(ws, "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"servers": {"files": {"tools": {"write_file": "outbox"}}}}`), 0o644))
	cmd := jukeboxCmd(t.Context(), ws, "record", "-o", "ro.jbx", "--", "node", filepath.Join(agents, "mcp_tx_agent.mjs"), data, "commit")
	cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+jukeboxBin(), "JUKEBOX_MCP_POLICY="+policy, "MCP_MODE=read_only")
	out, _ := cmd.CombinedOutput() // the agent's client throws on the refusal
	if !strings.Contains(string(out), "transaction is read_only (mcp_mode)") {
		t.Errorf("the agent was not told its write was refused for read_only:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Fatalf("a write ran under a read_only transaction:\n%s", out)
	}
}

func TestMCPInSDKTransaction(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	self := jukeboxBin()
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	policy := filepath.Join(ws, "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"servers": {"files": {"tools": {"write_file": "outbox"}}}}`), 0o644))
	for _, end := range []string{"rollback", "commit"} {
		cmd := jukeboxCmd(t.Context(), ws, "record", "-o", end+".jbx", "--", "node", filepath.Join(agents, "mcp_tx_agent.mjs"), data, end)
		cmd.Env = append(cmd.Env, "JUKEBOX_BIN="+self, "JUKEBOX_MCP_POLICY="+policy)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", end, err, out)
		}
		if !strings.Contains(string(out), "write: jukebox: write_file is held in the booth's outbox") {
			t.Errorf("%s: the call was not held:\n%s", end, out)
		}
		_, statErr := os.Stat(filepath.Join(data, "note.txt"))
		switch end {
		case "rollback":
			if statErr == nil {
				t.Fatalf("rollback: the held call ran:\n%s", out)
			}
		case "commit":
			if b, err := os.ReadFile(filepath.Join(data, "note.txt")); err != nil || string(b) != "written at the commit" {
				t.Errorf("commit: note.txt %q, %v\n%s", b, err, out)
			}
			if !strings.Contains(string(out), `commit: [{"server":"files","tool":"write_file"`) || !strings.Contains(string(out), `"ran":true`) {
				t.Errorf("commit: the answer does not list the call run:\n%s", out)
			}
		}
	}
}

// TestMCPDefaultEnvJoinsTheRun is issue 31's "MCP servers started by the
// official TypeScript client never see the run's variables": the client
// starts jukebox mcp with its default environment (no JUKEBOX_CONTROL),
// and jukebox mcp still records onto the run's tape (found through the
// process tree), not a tape of its own; the replay serves the server from
// that tape, so no server starts and the filesystem server's write does
// not happen again.
func TestMCPDefaultEnvJoinsTheRun(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	bin := filepath.Join(testenv.Binaries(t), "jukebox") // the test binary needs its variable to be jukebox
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	agent := filepath.Join(agents, "mcp_agent.mjs")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "JUKEBOX_BIN="+bin, "MCP_AGENT_DEFAULT_ENV=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jukebox %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("record", "-o", "rec.jbx", "--", "node", agent, data)
	if !strings.Contains(out, "joined the run of process") || !strings.Contains(out, "read: written through MCP") {
		t.Errorf("record:\n%s", out)
	}
	if own, _ := filepath.Glob(filepath.Join(ws, "tapes", "mcp-*.jbx")); len(own) > 0 {
		t.Errorf("jukebox mcp recorded to tapes of its own: %v", own)
	}
	tp := openTape(t, filepath.Join(ws, "rec.jbx"))
	n := 0
	for _, err := range tp.Frames(tapefmt.KindMCP) {
		must(t, err)
		n++
	}
	tp.Close()
	if n == 0 {
		t.Fatal("the run's tape holds no MCP message")
	}
	must(t, os.Remove(filepath.Join(data, "note.txt")))
	out = run("replay", "--strict", "rec.jbx")
	if !strings.Contains(out, "stdout identical to the recording") {
		t.Errorf("replay --strict:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Error("the replay started the filesystem server: its write happened again")
	}
}

// TestMCPRunPolicyWithTheClientsDefaultEnv: under record --mcp-policy, a
// jukebox mcp started by the official client with its default environment
// (none of the run's variables) joined the run but never read the policy,
// so a tool the policy refused (or held for the commit) ran at once. The
// run hands its policy to the session it opens.
func TestMCPRunPolicyWithTheClientsDefaultEnv(t *testing.T) {
	agents := testenv.RequireNode(t)
	t.Parallel()
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	must(t, os.Mkdir(data, 0o755))
	policy := filepath.Join(t.TempDir(), "policy.json")
	must(t, os.WriteFile(policy, []byte(`{"default": "run", "servers": {"filesystem": {"tools": {"write_file": "refuse"}}}}`), 0o644))
	cmd := exec.CommandContext(t.Context(), bin, "record", "--mcp-policy", policy, "-o", "rec.jbx", "--", "node", filepath.Join(agents, "mcp_agent.mjs"), data)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "JUKEBOX_BIN="+bin, "MCP_AGENT_DEFAULT_ENV=1")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "joined the run of process") {
		t.Fatalf("jukebox mcp did not join the run:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "note.txt")); err == nil {
		t.Errorf("write_file, refused by the run's policy, ran:\n%s", out)
	}
}
