package llmsim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const matchScript = `{"version": 1, "rules": [
  {"name": "api", "match": {"api": "messages", "user": "which api"}, "reply": {"text": "anthropic"}},
  {"name": "glob", "match": {"model": "gpt-4o*", "user": "^model$"}, "reply": {"text": "glob"}},
  {"name": "exact", "match": {"model": "exact/model", "user": "^model$"}, "reply": {"text": "exact"}},
  {"name": "sys", "match": {"system": "(?i)pirate"}, "reply": {"text": "arr"}},
  {"name": "after-read", "match": {"after_tool": "read_*", "tool_result": "^ok"}, "reply": {"text": "read ok"}},
  {"name": "after-any", "match": {"after_tool": true}, "reply": {"text": "after {{tool}}: {{tool_result}}"}},
  {"name": "fresh", "match": {"after_tool": false, "user": "fresh"}, "reply": {"text": "fresh {{user}}"}},
  {"name": "once", "match": {"user": "once"}, "times": 1, "reply": {"text": "first"}},
  {"name": "then", "match": {"user": "once"}, "reply": {"text": "later"}}
]}`

// toolConv is a chat conversation that ends with the result of tool name.
func toolConv(name, result string) string {
	return fmt.Sprintf(`{"model":"m","messages":[
	  {"role":"user","content":"fresh task"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":%q,"arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":%q}]}`, name, result)
}

func TestMatching(t *testing.T) {
	_, url := newTestServer(t, matchScript)
	chat := func(model, system, user string) string {
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`, model, system, user)
	}
	for _, tc := range []struct {
		name, path, body, rule, text string
	}{
		{"api chat skips", "/v1/chat/completions", chat("m", "", "which api"), "fallback", ""},
		{"api messages", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"which api"}]}`, "api", "anthropic"},
		{"glob", "/v1/chat/completions", chat("gpt-4o-mini", "", "model"), "glob", "glob"},
		{"glob no match", "/v1/chat/completions", chat("gpt-4", "", "model"), "fallback", ""},
		{"exact with slash", "/v1/chat/completions", chat("exact/model", "", "model"), "exact", "exact"},
		{"system", "/v1/chat/completions", chat("m", "You are a PIRATE", "hi"), "sys", "arr"},
		{"after named tool", "/v1/chat/completions", toolConv("read_file", "ok: 3 lines"), "after-read", "read ok"},
		{"tool_result mismatch", "/v1/chat/completions", toolConv("read_file", "error"), "after-any", "after read_file: error"},
		{"after any tool", "/v1/chat/completions", toolConv("write_file", "done"), "after-any", "after write_file: done"},
		{"not after tool", "/v1/chat/completions", chat("m", "", "fresh start"), "fresh", "fresh fresh start"},
		{"times first", "/v1/chat/completions", chat("m", "", "once"), "once", "first"},
		{"times then", "/v1/chat/completions", chat("m", "", "once"), "then", "later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, url, tc.path, tc.body)
			if got := resp.Header.Get("X-Llmsim-Rule"); got != tc.rule {
				t.Fatalf("rule %q, want %q: %s", got, tc.rule, b)
			}
			m := decode(t, string(b))
			text := get(m, "choices", 0, "message", "content")
			if tc.path == "/v1/messages" {
				text = get(m, "content", 0, "text")
			}
			if tc.text != "" && text != tc.text {
				t.Errorf("text %q, want %q", text, tc.text)
			}
		})
	}
}

func TestAfterToolAcrossAPIs(t *testing.T) {
	_, url := newTestServer(t, matchScript)
	anth := `{"model":"m","max_tokens":9,"messages":[
	  {"role":"user","content":"fresh task"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok fine"}]}]}]}`
	resp, b := post(t, url, "/v1/messages", anth)
	if resp.Header.Get("X-Llmsim-Rule") != "after-read" {
		t.Errorf("anthropic: rule %q: %s", resp.Header.Get("X-Llmsim-Rule"), b)
	}
	respAPI := `{"model":"m","input":[{"role":"user","content":"fresh task"},
	  {"type":"function_call","call_id":"c1","name":"write_file","arguments":"{}"},
	  {"type":"function_call_output","call_id":"c1","output":"saved"}]}`
	resp, b = post(t, url, "/v1/responses", respAPI)
	if resp.Header.Get("X-Llmsim-Rule") != "after-any" || get(decode(t, string(b)), "output", 0, "content", 0, "text") != "after write_file: saved" {
		t.Errorf("responses: rule %q: %s", resp.Header.Get("X-Llmsim-Rule"), b)
	}
}

func TestDeterminism(t *testing.T) {
	_, url := newTestServer(t, "")
	_, url2 := newTestServer(t, "")
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", chatBody("m1", bothUser, true, true)},
		{"/v1/chat/completions", chatBody("m1", "anything", false, false)},
		{"/v1/responses", `{"model":"m1","stream":true,"input":"please both"}`},
		{"/v1/messages", anthropicBody("m1", bothUser, true)},
		{"/v1/embeddings", `{"model":"e","input":["a","b"]}`},
	} {
		r1, b1 := post(t, url, tc.path, tc.body)
		r2, b2 := post(t, url2, tc.path, tc.body)
		if !bytes.Equal(b1, b2) || r1.Header.Get("X-Request-Id") != r2.Header.Get("X-Request-Id") || r1.Header.Get("Date") != "" {
			t.Errorf("%s: two servers answered the same request differently", tc.path)
		}
	}
}

func TestFallbackDependsOnModelAndPrompt(t *testing.T) {
	_, url := newTestServer(t, "")
	texts := map[string]string{}
	for _, model := range []string{"a", "b"} {
		for _, user := range []string{"hi", "hi!"} {
			resp, b := post(t, url, "/v1/chat/completions", chatBody(model, user, false, false))
			if resp.Header.Get("X-Llmsim-Rule") != "fallback" {
				t.Fatalf("rule %q", resp.Header.Get("X-Llmsim-Rule"))
			}
			text := get(decode(t, string(b)), "choices", 0, "message", "content").(string)
			for k, other := range texts {
				if other == text {
					t.Errorf("%s/%s and %s gave the same answer %q", model, user, k, text)
				}
			}
			texts[model+"/"+user] = text
		}
	}
}

func TestTemplatesKeepArgumentsValid(t *testing.T) {
	script := `{"version":1,"rules":[{"match":{},"reply":{"text":"{{model}} said {{user}}",
	  "tool_calls":[{"name":"echo","arguments":{"said":"{{user}}","model":"{{model}}","nested":{"list":["{{system}}"]}}}]}}]}`
	_, url := newTestServer(t, script)
	user := "quote \" backslash \\ newline \n tab \t <html> & \u2028 {{model}}"
	body := fmt.Sprintf(`{"model":"m\"x","messages":[{"role":"system","content":"s\\y"},{"role":"user","content":%q}]}`, user)
	_, b := post(t, url, "/v1/chat/completions", body)
	m := decode(t, string(b))
	args := mustJSONObject(t, get(m, "choices", 0, "message", "tool_calls", 0, "function", "arguments").(string))
	if args["said"] != user || args["model"] != `m"x` || get(args, "nested", "list", 0) != `s\y` {
		t.Errorf("args %v", args)
	}
	if get(m, "choices", 0, "message", "content") != `m"x said `+user {
		t.Errorf("text %q", get(m, "choices", 0, "message", "content"))
	}
}

func TestEmbeddings(t *testing.T) {
	_, url := newTestServer(t, "")
	_, fb := post(t, url, "/v1/embeddings", `{"model":"e","input":["alpha","beta"],"dimensions":64}`)
	_, bb := post(t, url, "/v1/embeddings", `{"model":"e","input":["alpha","beta"],"dimensions":64,"encoding_format":"base64"}`)
	f, b64 := decode(t, string(fb)), decode(t, string(bb))
	for i := range 2 {
		vec := get(f, "data", i, "embedding").([]any)
		raw, err := base64.StdEncoding.DecodeString(get(b64, "data", i, "embedding").(string))
		if err != nil || len(vec) != 64 || len(raw) != 4*64 || num(get(f, "data", i, "index")) != i {
			t.Fatalf("vector %d: %d floats, %d bytes, %v", i, len(vec), len(raw), err)
		}
		var norm float64
		for j, v := range vec {
			fromB64 := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
			if float32(v.(float64)) != fromB64 {
				t.Fatalf("float %d: %v vs base64 %v", j, v, fromB64)
			}
			norm += v.(float64) * v.(float64)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Errorf("vector %d norm² %v", i, norm)
		}
	}
	if fmt.Sprint(get(f, "data", 0, "embedding")) == fmt.Sprint(get(f, "data", 1, "embedding")) {
		t.Error("different inputs embedded the same")
	}
	_, def := post(t, url, "/v1/embeddings", `{"model":"e","input":"x"}`)
	if n := len(get(decode(t, string(def)), "data", 0, "embedding").([]any)); n != defaultDims {
		t.Errorf("default dims %d", n)
	}
}

func TestModelsAndRoutes(t *testing.T) {
	srv, url, err := Start("127.0.0.1:0", DefaultScript())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.URL() != url || srv.OpenAIBaseURL() != url+"/v1" || srv.AnthropicBaseURL() != url {
		t.Fatalf("urls %q %q %q", srv.URL(), srv.OpenAIBaseURL(), srv.AnthropicBaseURL())
	}
	_, b := getURL(t, url+"/v1/models", nil)
	if !strings.Contains(string(b), `"id":"demo-large","object":"model"`) {
		t.Errorf("models: %s", b)
	}
	status, b := getURL(t, url+"/v1/models/demo-small", map[string]string{"anthropic-version": "2023-06-01"})
	if status != 200 || !strings.Contains(string(b), `"type":"model","id":"demo-small"`) {
		t.Errorf("anthropic model: %d %s", status, b)
	}
	if status, _ := getURL(t, url+"/v1/models/nope", nil); status != 404 {
		t.Errorf("unknown model: %d", status)
	}
	for _, path := range []string{"/openai/v1/chat/completions", "/v1/v1/chat/completions"} {
		if r, b := post(t, url, path, chatBody("demo-large", "Say hello", false, false)); r.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, r.StatusCode, b)
		}
	}
	if srv.Hits() < 5 {
		t.Errorf("hits %d", srv.Hits())
	}
}

func TestDemoScriptCopyMatches(t *testing.T) {
	disk, err := os.ReadFile(filepath.Join("..", "..", "testdata", "llmsim", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, defaultScriptJSON()) {
		t.Fatal("testdata/llmsim/demo.json differs from internal/llmsim/demo.json: copy one over the other")
	}
	s, err := LoadScript(filepath.Join("..", "..", "testdata", "llmsim", "demo.json"))
	if err != nil || s.hashHex() != DefaultScript().hashHex() || s.Len() != DefaultScript().Len() {
		t.Fatalf("LoadScript: %v", err)
	}
}

// TestDemoLoopOverResponses walks the bundled demo's tool loop through the
// Responses API, which no SDK agent covers.
func TestDemoLoopOverResponses(t *testing.T) {
	srv := New(nil)
	ts := httptest.NewServer(srv)
	defer func() { srv.Close(); ts.Close() }()
	input := []any{map[string]any{"role": "user", "content": "Write a short poem about a jukebox to poem.txt"}}
	results := map[string]string{"write_file": "wrote", "read_file": "poem", "run_shell": "2"}
	var tools []string
	for step := 0; step < 5; step++ {
		body, _ := json.Marshal(map[string]any{"model": "demo-small", "input": input})
		_, b := post(t, ts.URL, "/v1/responses", string(body))
		out := get(decode(t, string(b)), "output").([]any)
		last := out[len(out)-1]
		if get(last, "type") == "message" {
			if text := get(last, "content", 0, "text"); text != "Done. I wrote poem.txt, read it back, and it has 2 lines. (demo-small)" {
				t.Fatalf("final text %q", text)
			}
			if strings.Join(tools, ",") != "write_file,read_file,run_shell" {
				t.Fatalf("tools %v", tools)
			}
			return
		}
		name := get(last, "name").(string)
		tools = append(tools, name)
		input = append(input, last, map[string]any{"type": "function_call_output", "call_id": get(last, "call_id"), "output": results[name]})
	}
	t.Fatalf("no final answer after tools %v", tools)
}

// TestChanceRule: a rule with a chance answers about that often, the
// same draws for the same seed, other draws for another, and a chance out
// of range is an error.
func TestChanceRule(t *testing.T) {
	draws := func(seed int) string {
		s, err := ParseScript([]byte(fmt.Sprintf(`{"version": 1, "seed": %d, "rules": [
			{"name": "coin", "match": {"user": "flip"}, "chance": 0.5, "reply": {"text": "heads"}}]}`, seed)))
		if err != nil {
			t.Fatal(err)
		}
		srv := New(s)
		var b strings.Builder
		for range 200 {
			if r := srv.pick(&conversation{user: "flip"}); r != nil {
				b.WriteByte('H')
			} else {
				b.WriteByte('T')
			}
		}
		return b.String()
	}
	a, again, other := draws(7), draws(7), draws(8)
	if a != again {
		t.Error("the same seed drew differently")
	}
	if a == other {
		t.Error("another seed drew the same")
	}
	if h := strings.Count(a, "H"); h < 70 || h > 130 {
		t.Errorf("a chance of 0.5 answered %d of 200 times", h)
	}
	for _, bad := range []string{"1.5", "-0.1"} {
		if _, err := ParseScript([]byte(`{"version": 1, "rules": [{"match": {}, "chance": ` + bad + `, "reply": {"text": "x"}}]}`)); err == nil {
			t.Errorf("chance %s parsed", bad)
		}
	}
}
