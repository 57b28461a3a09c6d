package engine

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// controlSession is a recording session's proxy and control API, with no
// agent: requests are made here as an agent would make them.
func controlSession(t *testing.T, limits breaker.Limits, mode tapefmt.RunMode, booth *BoothOptions) (*session, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "control.jbx")
	s := &session{o: RunOptions{Limits: limits, Booth: booth, Dir: t.TempDir()}, mode: mode}
	if err := s.openTape(path, tapefmt.SyncNever, s.runStart(nil)); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.proxy, err = newProxy(newLive(nil, RunOptions{}), s.tape, s.emit); err != nil {
		t.Fatal(err)
	}
	s.proxy.guard = s.guard()
	s.serveControl()
	t.Cleanup(func() { s.proxy.Close(); s.tape.Close() })
	return s, s.proxy.url() + "/_jukebox"
}

func controlCall(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, url, raw)
	}
	return resp.StatusCode, out
}

// TestControlToken: the control API answers the run's token alone; other
// processes of the machine, which can reach the port, cannot write the
// tape or stage anything.
func TestControlToken(t *testing.T) {
	s, base := controlSession(t, breaker.Limits{}, tapefmt.ModeRecord, nil)
	token := s.proxy.control.token
	for _, tok := range []string{"", "wrong", token + "x"} {
		for _, path := range []string{"/v1/info", "/turn", "/v1/tx"} {
			method := "POST"
			if path == "/v1/info" {
				method = "GET"
			}
			code, out := controlCall(t, method, base+path, tok, `{"agent":"x","turn":1}`)
			if code != http.StatusUnauthorized || !strings.Contains(out["error"].(map[string]any)["message"].(string), TokenEnv) {
				t.Errorf("%s %s with token %q: %d %v", method, path, tok, code, out)
			}
		}
	}
	if n := s.tape.Len(); n != 1 {
		t.Errorf("refused requests wrote %d frames past run.start", n-1)
	}
	code, out := controlCall(t, "GET", base+"/v1/info", token, "")
	if code != 200 || out["api"] != float64(ControlAPIVersion) || out["transactions"] != true || len(out["tape_id"].(string)) != 32 {
		t.Errorf("info: %d %v", code, out)
	}
	for _, path := range []string{"/turn", "/v1/turn"} {
		if code, out := controlCall(t, "POST", base+path, token, `{"agent":"planner","turn":1,"text":"hi","model":"gpt-4o","cost_usd":0.01}`); code != 200 || out["frame"] == nil {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
	if code, _ := controlCall(t, "POST", base+"/v1/turn", token, `{"turn":1,"cost":1}`); code != http.StatusBadRequest {
		t.Errorf("an unknown key: %d, want 400", code)
	}
	if code, _ := controlCall(t, "POST", base+"/v1/turn", token, `{"turn":1,"cost_usd":-1}`); code != http.StatusBadRequest {
		t.Errorf("a negative cost: %d, want 400", code)
	}
	// Two of these summed to +Inf, and ls --json of the folder failed.
	if code, _ := controlCall(t, "POST", base+"/v1/turn", token, `{"turn":1,"cost_usd":1.7e308}`); code != http.StatusBadRequest {
		t.Errorf("a cost no turn has: %d, want 400", code)
	}
	if env := s.runEnv(false); env[TokenEnv] != token || env["JUKEBOX_CONTROL"] != base {
		t.Errorf("the agent's environment: %v", env)
	}
}

// TestControlTurnTripsBreaker: the breaker counts the cost a turn reports
// and its text; a trip comes back in the answer and goes on the tape.
func TestControlTurnTripsBreaker(t *testing.T) {
	s, base := controlSession(t, breaker.Limits{MaxCost: 0.01}, tapefmt.ModeRecord, nil)
	token := s.proxy.control.token
	if _, out := controlCall(t, "POST", base+"/v1/turn", token, `{"agent":"a","turn":1,"cost_usd":0.006}`); out["breaker"] != nil {
		t.Fatalf("under the cap: %v", out)
	}
	_, out := controlCall(t, "POST", base+"/v1/turn", token, `{"agent":"a","turn":2,"cost_usd":0.006}`)
	trip, _ := out["breaker"].(map[string]any)
	if trip == nil || trip["rule"] != breaker.RuleCost || !strings.Contains(trip["reason"].(string), "the agent reported") {
		t.Fatalf("past the cap: %v", out)
	}
	if _, out := controlCall(t, "GET", base+"/v1/breaker", token, ""); out["tripped"] != true {
		t.Errorf("breaker: %v", out)
	}
	if s.trip.Load() == nil {
		t.Error("no trip for the run's result")
	}
}

// TestControlTransactionsUnavailable: a replay whose tape holds no
// control frames (recorded before them) serves no SDK transactions, and
// says why; a booth run and a fork serve them (sdkreplay_linux_test.go in
// cmd/jukebox).
func TestControlTransactionsUnavailable(t *testing.T) {
	for _, c := range []struct {
		mode  tapefmt.RunMode
		booth *BoothOptions
		want  string
	}{
		{tapefmt.ModeReplay, nil, "the tape holds no control-API exchange to answer this from"},
	} {
		s, base := controlSession(t, breaker.Limits{}, c.mode, c.booth)
		code, out := controlCall(t, "POST", base+"/v1/tx", s.proxy.control.token, `{}`)
		e, _ := out["error"].(map[string]any)
		if code != http.StatusConflict || e["type"] != "unavailable" || !strings.Contains(e["message"].(string), c.want) {
			t.Errorf("%s booth=%v: %d %v", c.mode, c.booth != nil, code, out)
		}
		if code, _ := controlCall(t, "POST", base+"/v1/tx/tx-1/commit", s.proxy.control.token, `{}`); code != http.StatusNotFound {
			t.Errorf("%s: commit of no transaction: %d", c.mode, code)
		}
	}
}

// TestMCPToolCallLink: a tools/call request an MCP session carries out is
// linked to the model's tool call that asked for it (same tool, same
// arguments in any key order, the latest not linked yet).
func TestMCPToolCallLink(t *testing.T) {
	s, base := controlSession(t, breaker.Limits{}, tapefmt.ModeRecord, nil)
	token := s.proxy.control.token
	if code, _ := controlCall(t, "POST", base+"/v1/mcp/start", token, `{"server":"files","argv":["srv"]}`); code != 200 {
		t.Fatalf("start: %d", code)
	}
	answer := `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\",\"content\":\"x\"}"}}]}}]}`
	s.proxy.control.mcp.asked(42, &tapefmt.LLMResponse{}, []byte(answer))
	msg := func(m string) map[string]any {
		body, _ := json.Marshal(map[string]any{"server": "files", "session": 1, "dir": "to_server", "message": m})
		code, out := controlCall(t, "POST", base+"/v1/mcp/message", token, string(body))
		if code != 200 {
			t.Fatalf("message: %d %v", code, out)
		}
		return out
	}
	msg(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"x","path":"a.txt"}}}`)
	msg(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"x","path":"a.txt"}}}`)
	s.proxy.Close()
	if err := s.tape.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var links []*tapefmt.ToolLink
	for f, err := range tp.Frames(tapefmt.KindMCP) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if m := p.(*tapefmt.MCPMessage); m.Direction == tapefmt.MCPToServer {
			links = append(links, m.Call)
		}
	}
	if len(links) != 2 || links[0] == nil || *links[0] != (tapefmt.ToolLink{Frame: 42, ID: "call_1"}) || links[1] != nil {
		t.Errorf("links: %+v, want the first call linked to frame 42 call_1 and the second (a repeat) not", links)
	}
}

// TestBeginsMatchByName: a replay answers a transaction's beginning with
// the recorded one of the same name (the Python SDK's turn, so that
// transactions begun at once each get their own), before any other; one
// recorded without a name (by an SDK from before names) is taken for a
// named one only when none of that name is left; two names never match,
// nor does an extra key on another route.
func TestBeginsMatchByName(t *testing.T) {
	ct := &ctlTape{list: []ctlRecorded{
		{method: "POST", path: "/v1/tx", req: []byte(`{"mcp_mode":"staged_acid"}`)},
		{method: "POST", path: "/v1/tx", req: []byte(`{"mcp_mode":"staged_acid","name":"turn 1 of a#1"}`)},
		{method: "POST", path: "/v1/tx", req: []byte(`{"mcp_mode":"staged_acid","name":"turn 1 of b#2"}`)},
		{method: "POST", path: "/v1/turn", req: []byte(`{"agent":"a","turn":1}`)},
	}}
	for _, c := range []struct {
		path, body string
		want       int // the recorded exchange taken, -1 for none
	}{
		{"/v1/tx", `{"mcp_mode":"staged_acid","name":"turn 1 of b#2"}`, 2}, // b's, though two come first
		{"/v1/tx", `{"mcp_mode":"staged_acid","name":"turn 1 of a#1"}`, 1},
		{"/v1/tx", `{"mcp_mode":"staged_acid","name":"turn 1 of c#3"}`, 0}, // the unnamed one
		{"/v1/tx", `{"mcp_mode":"staged_acid","name":"turn 1 of d#4"}`, -1},
		{"/v1/turn", `{"agent":"a","turn":1,"name":"x"}`, -1},
		{"/v1/turn", `{"agent":"a","turn":1}`, 3},
	} {
		got, d := ct.take("POST", c.path, []byte(c.body))
		took := "nothing"
		if got != nil {
			took = string(got.req)
		}
		switch {
		case c.want < 0 && d == nil:
			t.Errorf("%s %s: took %s, want a divergence", c.path, c.body, took)
		case c.want >= 0 && (d != nil || got != &ct.list[c.want]):
			t.Errorf("%s %s: took %s (%v), want %s", c.path, c.body, took, d, ct.list[c.want].req)
		}
	}
}
