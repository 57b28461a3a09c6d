package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

type tape struct {
	mu   sync.Mutex
	msgs []Message
}

func (t *tape) rec(m Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m.Raw = append([]byte(nil), m.Raw...)
	t.msgs = append(t.msgs, m)
}

// TestRelayBadLinesAndADeadServer: a line that is not JSON and one over
// the limit pass through as they came, and are recorded with what was
// wrong (the long one cut); when the server exits, the request it did not
// answer, and a later one, get the JSON-RPC error a client expects.
func TestRelayBadLinesAndADeadServer(t *testing.T) {
	clientR, clientW := io.Pipe()
	serverInR, serverInW := io.Pipe()
	serverOutR, serverOutW := io.Pipe()
	var out bytes.Buffer
	var outMu sync.Mutex
	tp := &tape{}
	done := make(chan error, 1)
	go func() {
		done <- Relay(clientR, lockedWriter{&outMu, &out}, serverInW, serverOutR, tp.rec, RelayOptions{Max: 1024})
	}()
	// The server: reads two lines, then answers the first, writes garbage
	// and a long line, and dies without answering the second.
	srv := bufio.NewReader(serverInR)
	go func() {
		io.WriteString(clientW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
		io.WriteString(clientW, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"slow"}}`+"\n")
	}()
	for i := 0; i < 2; i++ {
		if _, err := srv.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	long := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 3000) + `"}}`
	io.WriteString(serverOutW, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`+"\nnot json at all\n"+long+"\n")
	serverOutW.Close()
	go io.Copy(io.Discard, serverInR) // the server is gone: whatever comes is dropped
	// A request after the server died.
	io.WriteString(clientW, `{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
	clientW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	outMu.Lock()
	got := out.String()
	outMu.Unlock()
	for _, want := range []string{`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}` + "\n", "not json at all\n", long + "\n",
		`"id":"b","error":{"code":-32000`, `"id":3,"error":{"code":-32000`} {
		if !strings.Contains(got, want) {
			t.Errorf("the client did not get %.80q; got:\n%.300s", want, got)
		}
	}
	var notJSON *Message
	for i, m := range tp.msgs {
		if m.Problem == "not JSON" {
			notJSON = &tp.msgs[i]
		}
	}
	if notJSON == nil || notJSON.Dir != tapefmt.MCPFromServer || string(notJSON.Raw) != "not json at all" {
		t.Errorf("the line that is not JSON: %+v", notJSON)
	}
	var cut *Message
	for i, m := range tp.msgs {
		if strings.Contains(m.Problem, "over the limit") {
			cut = &tp.msgs[i]
		}
	}
	if cut == nil || len(cut.Raw) != 1024 || cut.Size != len(long) {
		t.Errorf("the long line: %+v", cut)
	}
	dead := 0
	for _, m := range tp.msgs {
		if strings.HasPrefix(m.Problem, "answered by jukebox") {
			dead++
		}
	}
	if dead != 2 {
		t.Errorf("%d answers for the dead server, want 2", dead)
	}
}

// TestReplayer: requests are answered from the session by method and
// params (keys in any order), with the client's id and the notifications
// that followed; each recorded answer serves once; a request the session
// does not hold gets an error and is reported.
func TestReplayer(t *testing.T) {
	rec := []Message{
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"b":1,"a":2}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"result":{"ok":true},"jsonrpc":"2.0","id":0}`)},
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)},
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"hi"}}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`)},
	}
	r := NewReplayer(rec)
	var diverged []string
	r.Diverged = func(method string, params []byte) { diverged = append(diverged, method) }
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"a":2,"b":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"m":"hi"},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"m":"hi"},"name":"echo"}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	tp := &tape{}
	if err := r.Serve(strings.NewReader(in), &out, tp.rec); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"result":{"ok":true},"jsonrpc":"2.0","id":"x"}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
	}
	if len(lines) != 4 || strings.Join(lines[:3], "\n") != strings.Join(want, "\n") {
		t.Fatalf("answers:\n%s", out.String())
	}
	if !strings.Contains(lines[3], `"id":8,"error"`) || len(diverged) != 1 || diverged[0] != "tools/call" {
		t.Errorf("a second call the session answered once: %s; diverged %v", lines[3], diverged)
	}
	if len(tp.msgs) != 8 {
		t.Errorf("recorded %d messages, want the 4 in and 4 out", len(tp.msgs))
	}
}

// TestWrap: every stdio server of a config starts through jukebox mcp,
// its other fields kept; URL servers are left and said; wrapping twice
// changes nothing; VS Code's "servers" works too; a file with no servers
// is an error.
func TestWrap(t *testing.T) {
	in := `{"mcpServers": {
	  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/w"], "env": {"A": "1"}},
	  "remote": {"url": "https://example.invalid/mcp"},
	  "bare": {"command": "my-server"}},
	 "theme": "dark"}`
	out, res, err := Wrap([]byte(in), "/usr/local/bin/jukebox")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
		} `json:"mcpServers"`
		Theme string `json:"theme"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	files := doc.MCPServers["files"]
	if files.Command != "/usr/local/bin/jukebox" || strings.Join(files.Args, " ") != "mcp --name files -- npx -y @modelcontextprotocol/server-filesystem /w" || files.Env["A"] != "1" {
		t.Errorf("files: %+v", files)
	}
	if b := doc.MCPServers["bare"]; strings.Join(b.Args, " ") != "mcp --name bare -- my-server" {
		t.Errorf("bare: %+v", b)
	}
	if r := doc.MCPServers["remote"]; r.Command != "" || r.URL == "" || res.Skipped["remote"] == "" {
		t.Errorf("remote: %+v, %v", r, res.Skipped)
	}
	if doc.Theme != "dark" || strings.Join(res.Wrapped, ",") != "bare,files" {
		t.Errorf("theme %q, wrapped %v", doc.Theme, res.Wrapped)
	}
	again, res2, err := Wrap(out, "/usr/local/bin/jukebox")
	if err != nil || !bytes.Equal(again, out) || len(res2.Wrapped) != 0 || len(res2.Already) != 2 {
		t.Errorf("wrapping twice: %v %+v\n%s", err, res2, again)
	}
	vs, res3, err := Wrap([]byte(`{"servers": {"x": {"type": "stdio", "command": "srv"}}}`), "jb")
	if err != nil || !strings.Contains(string(vs), `"type": "stdio"`) || len(res3.Wrapped) != 1 {
		t.Errorf("VS Code: %v %s", err, vs)
	}
	// An empty servers object wrapped nothing with exit 0, where
	// docs/mcp.md says a file without servers is exit 2.
	for _, bad := range []string{`[]`, `{"other": {}}`, `{"mcpServers": {"x": {"command": "c", "args": "no"}}}`, `{"mcpServers": {}}`, `{"servers": {}}`} {
		if _, _, err := Wrap([]byte(bad), "jb"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestPendingResponseFirst: a fast server's response can be seen before
// its request is counted as sent; that request is not waiting, and a
// dead server must not answer it again (the bench saw 396 such answers in
// 2,000 round trips before this was kept by count).
func TestPendingResponseFirst(t *testing.T) {
	p := newPending()
	p.answered(Message{Raw: []byte(`{"jsonrpc":"2.0","id":7,"result":{}}`)})
	p.sent(json.RawMessage(`7`))
	p.sent(json.RawMessage(`"a"`))
	left := p.drain()
	if len(left) != 1 || string(left[0]) != `"a"` {
		t.Errorf("waiting: %s", left)
	}
}

// TestRecordedBeforePassedOn: each message is on the tape before its
// peer has it, so a client that ends jukebox mcp as soon as it has an
// answer (the official SDK's close does) loses no message from the tape
// (the record-then-replay test saw a missing last call before this).
func TestRecordedBeforePassedOn(t *testing.T) {
	var mu sync.Mutex
	var client, server bytes.Buffer
	early := 0
	rec := func(m Message) {
		mu.Lock()
		defer mu.Unlock()
		peer := &server
		if m.Dir == tapefmt.MCPFromServer {
			peer = &client
		}
		if bytes.Contains(peer.Bytes(), m.Raw) {
			early++
		}
	}
	req := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	resp := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	// The server answers once it has the request, then exits.
	outR, outW := io.Pipe()
	serverIn := &answeringServer{w: lockedWriter{&mu, &server}, answer: func() {
		go func() {
			io.WriteString(outW, resp)
			outW.Close()
		}()
	}}
	if err := Relay(strings.NewReader(req), lockedWriter{&mu, &client}, serverIn, outR, rec, RelayOptions{}); err != nil {
		t.Fatal(err)
	}
	if early != 0 || server.String() != req || client.String() != resp {
		t.Errorf("%d messages reached their peer before the tape; server got %q, client %q", early, server.String(), client.String())
	}
}

// answeringServer takes what the relay writes to the server and calls
// answer once the first line is in.
type answeringServer struct {
	w      io.Writer
	answer func()
	once   sync.Once
}

func (a *answeringServer) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	if bytes.Contains(p, []byte("\n")) {
		a.once.Do(a.answer)
	}
	return n, err
}

func (a *answeringServer) Close() error { return nil }

// TestHTTPProxyServerDown: a streamable-HTTP server that cannot be
// reached answers the client's request with a JSON-RPC error of its id,
// recorded, rather than a bare HTTP failure.
func TestHTTPProxyServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	up, _ := url.Parse(dead)
	tp := &tape{}
	srv := httptest.NewServer(NewHTTPProxy(up, tp.rec, HTTPOptions{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `"id":9,"error":{"code":-32000`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if len(tp.msgs) != 2 || tp.msgs[0].Dir != tapefmt.MCPToServer || !strings.Contains(tp.msgs[1].Problem, "cannot be reached") {
		t.Errorf("recorded: %+v", tp.msgs)
	}
}

// TestHTTPProxyPolicy: under a policy, an HTTP server's tools/call that
// the policy holds or refuses is answered by jukebox (recorded as such)
// and never reaches the server; other requests go on, and tools/list
// teaches the policy the server's annotations.
func TestHTTPProxyPolicy(t *testing.T) {
	var reached []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reached = append(reached, string(body))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"post","annotations":{"readOnlyHint":false}}]}}`))
	}))
	defer upstream.Close()
	up, _ := url.Parse(upstream.URL + "/mcp")
	path := t.TempDir() + "/policy.json"
	os.WriteFile(path, []byte(`{"servers": {"s": {"trust_annotations": true, "tools": {"drop": "refuse"}}}}`), 0o644)
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	hold := func(tool string, args json.RawMessage, approve bool) (string, error) { return "key-1", nil }
	tp := &tape{}
	srv := httptest.NewServer(NewHTTPProxy(up, tp.rec, HTTPOptions{Intercept: p.Intercept("s", hold, func(s string) { said = append(said, s) }),
		ServerSaw: func(m Message) { p.Learn("s", m) }}))
	defer srv.Close()
	post := func(body string) string {
		resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if got := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"post","arguments":{}}}`); !strings.Contains(got, "held in the booth's outbox") || !strings.Contains(got, "key-1") {
		t.Errorf("held call answered %s", got)
	}
	if got := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"drop","arguments":{}}}`); !strings.Contains(got, `"id":3,"error"`) {
		t.Errorf("refused call answered %s", got)
	}
	if len(reached) != 1 {
		t.Errorf("the server got %d requests, want only tools/list: %q", len(reached), reached)
	}
	policyAnswers := 0
	for _, m := range tp.msgs {
		if m.Problem == PolicyAnswer {
			policyAnswers++
		}
	}
	if policyAnswers != 2 || len(said) != 2 {
		t.Errorf("%d answers by the policy on the tape, said %q", policyAnswers, said)
	}
}

// TestPolicy: a tool's own rule wins; a trusted server's annotations
// decide (read-only runs, open-world, presumed when unsaid, is held);
// an untrusted server's annotations count for nothing; then the server's
// and the policy's defaults; a bad decision in the file is an error.
func TestPolicy(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/policy.json"
	os.WriteFile(path, []byte(`{"default": "refuse", "servers": {
	  "slack": {"trust_annotations": true, "tools": {"delete_channel": "refuse"}},
	  "shady": {"default": "run"}}}`), 0o644)
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	list := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[
	  {"name":"read_channel","annotations":{"readOnlyHint":true}},
	  {"name":"post_message","annotations":{"readOnlyHint":false}},
	  {"name":"local_note","annotations":{"openWorldHint":false},"outputSchema":{"type":"object"}},
	  {"name":"delete_channel","annotations":{"readOnlyHint":true}}]}}`)
	p.Learn("slack", Message{Raw: list})
	p.Learn("shady", Message{Raw: list})
	for _, c := range []struct {
		server, tool string
		want         Decision
	}{
		{"slack", "read_channel", Run},
		{"slack", "post_message", Outbox},
		{"slack", "local_note", Run},
		{"slack", "delete_channel", Refuse}, // the tool's rule over a lying annotation
		{"slack", "unlisted", Refuse},       // no annotations known: the policy's default
		{"shady", "read_channel", Run},      // untrusted: its annotations are ignored, its default runs
		{"shady", "post_message", Run},
		{"other", "anything", Refuse},
	} {
		if d, why := p.Decide(c.server, c.tool); d != c.want {
			t.Errorf("%s %s: %s (%s), want %s", c.server, c.tool, d, why, c.want)
		}
	}
	if !p.Structured("slack", "local_note") || p.Structured("slack", "post_message") {
		t.Error("output schemas not learnt")
	}
	if !strings.Contains(string(Pending(json.RawMessage(`7`), "local_note", "k", true)), `"isError":true`) {
		t.Error("a held call of a tool with an output schema must not claim a result")
	}
	for _, bad := range []string{`{"default": "later"}`, `{"servers": {"a": {"tools": {"t": "maybe"}}}}`, `{"sever": {}}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := LoadPolicy(path); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestReplayerProgress is issue 31's "MCP replay drops progress
// notifications sent during a call (recorded [1,2,3,4], replayed [])":
// what the server sent while a request ran (its progress notifications,
// a log message) is replayed before the response, in order, even when
// another request was sent meanwhile.
func TestReplayerProgress(t *testing.T) {
	progress := func(n int) Message {
		return Message{Dir: tapefmt.MCPFromServer, Raw: fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":%d,"total":4}}`, n)}
	}
	rec := []Message{
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":3}}}`)},
		progress(1),
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`)},
		progress(2),
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","id":4,"result":{"tools":[]}}`)},
		progress(3),
		progress(4),
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`)},
	}
	in := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":3}}}` + "\n"
	var out bytes.Buffer
	if err := NewReplayer(rec).Serve(strings.NewReader(in), &out, (&tape{}).rec); err != nil {
		t.Fatal(err)
	}
	want := "1 notifications/message 2 3 4 response 3"
	if got := replayedOrder(t, strings.Split(strings.TrimSpace(out.String()), "\n")); got != want {
		t.Errorf("stdio: replayed %q, want %q", got, want)
	}
	// Over streamable HTTP the answer is an event stream: the same
	// messages before the response, in order.
	srv := httptest.NewServer(NewHTTPReplay(NewReplayer(rec), (&tape{}).rec))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var events []string
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		}
	}
	if got := replayedOrder(t, events); resp.Header.Get("Content-Type") != "text/event-stream" || got != want {
		t.Errorf("HTTP: %s replayed %q, want %q", resp.Header.Get("Content-Type"), got, want)
	}
}

// replayedOrder names each replayed message: a progress notification by
// its progress, another notification by its method, a response by id.
func replayedOrder(t *testing.T, lines []string) string {
	t.Helper()
	var got []string
	for _, line := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Progress int `json:"progress"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m.Method == "notifications/progress":
			got = append(got, fmt.Sprint(m.Params.Progress))
		case m.Method != "":
			got = append(got, m.Method)
		default:
			got = append(got, "response "+string(m.ID))
		}
	}
	return strings.Join(got, " ")
}

// TestHeldRetryHeldOnce is issue 31's "each retry gets a new idempotency
// key, and both run at the commit": a model that retries a held call with
// the same arguments gets the call already held (the same key), and the
// outbox holds it once; other arguments are another call.
func TestHeldRetryHeldOnce(t *testing.T) {
	path := t.TempDir() + "/policy.json"
	os.WriteFile(path, []byte(`{"servers": {"s": {"tools": {"write_file": "outbox"}}}}`), 0o644)
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	var holds int
	hold := func(tool string, args json.RawMessage, approve bool) (string, error) {
		holds++
		return fmt.Sprintf("key-%d", holds), nil
	}
	intercept := p.Intercept("s", hold, func(string) {})
	call := func(id int, args string) string {
		return string(intercept(Message{Raw: fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":%s}}`, id, args)}))
	}
	first := call(1, `{"path":"a","content":"x"}`)
	retry := call(2, `{"content":"x","path":"a"}`) // the same arguments, in another order
	other := call(3, `{"path":"b","content":"x"}`)
	if holds != 2 || !strings.Contains(first, "key-1") || !strings.Contains(retry, "key-1") || !strings.Contains(retry, `"id":2`) || !strings.Contains(other, "key-2") {
		t.Errorf("%d holds; answers:\n%s\n%s\n%s", holds, first, retry, other)
	}
}

// TestHeldCallOfASchemaTool is issue 31's "a held MCP call comes back
// with isError: true whenever the tool declares an output schema": the
// listing the client gets leaves out the output schema of a tool the
// policy holds (the tape keeps that listing, marked), so the pending
// answer is no error; a tool the policy runs keeps its schema.
func TestHeldCallOfASchemaTool(t *testing.T) {
	path := t.TempDir() + "/policy.json"
	os.WriteFile(path, []byte(`{"servers": {"fs": {"tools": {"write_file": "outbox"}}}}`), 0o644)
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	hold := func(tool string, args json.RawMessage, approve bool) (string, error) { return "key-1", nil }
	clientR, clientW := io.Pipe()
	outR, outW := io.Pipe()
	serverInR, serverInW := io.Pipe()
	serverOutR, serverOutW := io.Pipe()
	tp := &tape{}
	done := make(chan error, 1)
	go func() {
		done <- Relay(clientR, outW, serverInW, serverOutR, tp.rec, RelayOptions{
			Rewrite: func(m Message) []byte { return p.Listing("fs", m) }, Intercept: p.Intercept("fs", hold, func(string) {})})
		outW.Close()
	}()
	go io.Copy(io.Discard, serverInR)
	client := bufio.NewReader(outR)
	schema := `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	io.WriteString(clientW, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n")
	io.WriteString(serverOutW, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"write_file","outputSchema":`+schema+`},{"name":"read_file","outputSchema":`+schema+`}]}}`+"\n")
	listing, err := client.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(listing), &l); err != nil || len(l.Result.Tools) != 2 ||
		l.Result.Tools[0].OutputSchema != nil || l.Result.Tools[1].OutputSchema == nil {
		t.Errorf("the client's listing: %s (%v)", listing, err)
	}
	io.WriteString(clientW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a"}}}`+"\n")
	answer, err := client.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(answer, `"isError":false`) || !strings.Contains(answer, "key-1") {
		t.Errorf("the held call's answer: %s", answer)
	}
	clientW.Close()
	serverOutW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, m := range tp.msgs {
		if m.Problem == Rewritten && !strings.Contains(string(m.Raw), `"name":"write_file","outputSchema"`) {
			rewritten++
		}
	}
	if rewritten != 1 {
		t.Errorf("the tape does not keep the listing the client got, marked: %+v", tp.msgs)
	}
}

// TestReplayerSettlesBeforeTheResponse: a request's progress notifications
// and its response were written together; the official TypeScript client
// read them in one chunk and handled the notifications after the response
// had removed its progress handler (onprogress got none or some). The
// replay pauses (notifySettle) between them, over stdio and HTTP.
func TestReplayerSettlesBeforeTheResponse(t *testing.T) {
	rec := []Message{
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":3}}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1,"total":2}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":2,"total":2}}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`)},
		{Dir: tapefmt.MCPToServer, Raw: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)},
		{Dir: tapefmt.MCPFromServer, Raw: []byte(`{"jsonrpc":"2.0","id":4,"result":{"tools":[]}}`)},
	}
	var out bytes.Buffer
	var at []string // what was written when the replay paused
	old := settle
	settle = func() { at = append(at, out.String()) }
	defer func() { settle = old }()
	in := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":3}}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}` + "\n"
	if err := NewReplayer(rec).Serve(strings.NewReader(in), &out, (&tape{}).rec); err != nil {
		t.Fatal(err)
	}
	// Once, for the request with notifications, after both and before
	// its response; not for tools/list, which has none.
	if len(at) != 1 || replayedOrder(t, strings.Split(strings.TrimSpace(at[0]), "\n")) != "1 2" {
		t.Errorf("paused %d times, the first after %q", len(at), at)
	}
}
