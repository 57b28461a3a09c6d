package llmsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var badBodies = map[string][]string{
	epChat: {
		``, `not json`, `[]`, `null`, `"str"`, `123`, `{"model":`, `{}`,
		`{"model":5,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m"}`, `{"model":"m","messages":"hi"}`, `{"model":"m","messages":[]}`,
		`{"model":"m","messages":[1]}`, `{"model":"m","messages":[null]}`,
		`{"model":"m","messages":[{"role":"wizard","content":"x"}]}`,
		`{"model":"m","messages":[{"content":"x"}]}`,
		`{"model":"m","messages":[{"role":"user","content":5}]}`,
		`{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"text":"no type"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[5]}]}`,
		`{"model":"m","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","stream_options":5,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":"x"}]}`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"{\"model\":\"m\xff\xfe\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]",
	},
	epResponses: {
		`{}`, `{"model":"m"}`, `{"model":"m","input":5}`, `{"model":"m","input":[5]}`,
		`{"model":"m","input":[{"content":"x"}]}`, `{"model":"m","input":"x","instructions":7}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":7}]}`,
	},
	epMessages: {
		`{}`, `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":"a","messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":9}`, `{"model":"m","max_tokens":9,"messages":[]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"system","content":"x"}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":5}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"no":"type"}]}]}`,
		`{"model":"m","max_tokens":9,"system":5,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":5}]}]}`,
	},
	epEmbeddings: {
		`{}`, `{"input":"x"}`, `{"model":"e"}`, `{"model":"e","input":5}`, `{"model":"e","input":[]}`,
		`{"model":"e","input":[{}]}`, `{"model":"e","input":"x","dimensions":-1}`,
		`{"model":"e","input":"x","dimensions":99999}`, `{"model":"e","input":"x","encoding_format":"hex"}`,
	},
	epCountTokens: {`{}`, `{"model":"m","messages":"x"}`},
}

// checkErrorBody fails unless b is the provider's error JSON.
func checkErrorBody(t testing.TB, b []byte, anthropic bool) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an error JSON: %v: %s", err, b)
	}
	if anthropic && e.Type != "error" {
		t.Fatalf("anthropic error without type \"error\": %s", b)
	}
}

func TestBadRequests(t *testing.T) {
	_, url := newTestServer(t, "")
	for ep, bodies := range badBodies {
		for _, body := range bodies {
			resp, b := post(t, url, ep, body)
			if resp.StatusCode != 400 {
				t.Errorf("%s %.60q: status %d, want 400: %s", ep, body, resp.StatusCode, b)
				continue
			}
			checkErrorBody(t, b, ep == epMessages || ep == epCountTokens)
		}
	}
}

func TestBadPathsAndMethods(t *testing.T) {
	t.Parallel()
	_, url := newTestServer(t, "")
	if resp, b := post(t, url, "/v1/nope", `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	} else {
		checkErrorBody(t, b, false)
	}
	if status, b := getURL(t, url+"/v1/chat/completions", nil); status != 405 {
		t.Errorf("GET chat: %d", status)
	} else {
		checkErrorBody(t, b, false)
	}
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", maxBody) + `"}]}`
	if resp, b := post(t, url, epMessages, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d", resp.StatusCode)
	} else {
		checkErrorBody(t, b, true)
	}
}

func TestScriptErrors(t *testing.T) {
	for _, s := range []string{
		``, `{}`, `{"version":2,"rules":[]}`, `{"version":1,"rulez":[]}`,
		`{"version":1,"rules":[{"reply":{}}]}`,
		`{"version":1,"rules":[{"match":{"user":"("},"reply":{"text":"x"}}]}`,
		`{"version":1,"rules":[{"match":{"after_tool":5},"reply":{"text":"x"}}]}`,
		`{"version":1,"rules":[{"match":{"api":"grpc"},"reply":{"text":"x"}}]}`,
		`{"version":1,"rules":[{"reply":{"tool_calls":[{"name":"","arguments":{}}]}}]}`,
		`{"version":1,"rules":[{"reply":{"tool_calls":[{"name":"t","arguments":[1]}]}}]}`,
		`{"version":1,"rules":[{"reply":{"tool_calls":[{"name":"t","arguments":"{}"}]}}]}`,
		`{"version":1,"rules":[{"fail":{}}]}`,
		`{"version":1,"rules":[{"fail":{"status":200}}]}`,
		`{"version":1,"rules":[{"fail":{"status":500,"hang":true}}]}`,
		`{"version":1,"rules":[{"reply":{"text":"x"},"chunk_size":-1}]}`,
		`{"version":1,"rules":[{"reply":{"text":"x"},"delay_ms":999999}]}`,
		`{"version":1,"rules":[{"reply":{"text":"x"},"times":-1}]}`,
		`{"version":1,"defaults":{"first_delay_ms":-5},"rules":[]}`,
	} {
		if _, err := ParseScript([]byte(s)); !errors.Is(err, ErrScript) {
			t.Errorf("%s: err %v, want ErrScript", s, err)
		}
	}
}

// FuzzServeHTTP feeds arbitrary bodies to every endpoint: the server must
// answer 200 with JSON or SSE, or a 4xx with the provider's error JSON, and
// never panic.
func FuzzServeHTTP(f *testing.F) {
	eps := []string{epChat, epResponses, epMessages, epEmbeddings, epCountTokens}
	for i, ep := range eps {
		for _, b := range badBodies[ep] {
			f.Add(uint8(i), []byte(b))
		}
	}
	f.Add(uint8(0), []byte(chatBody("m", bothUser, true, true)))
	f.Add(uint8(1), []byte(`{"model":"m","stream":true,"input":"please both"}`))
	f.Add(uint8(2), []byte(anthropicBody("m", bothUser, true)))
	s, err := ParseScript([]byte(testScript))
	if err != nil {
		f.Fatal(err)
	}
	srv := New(s)
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := eps[int(which)%len(eps)]
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ep, bytes.NewReader(body)))
		switch {
		case rec.Code == 200 && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
			parseSSE(t, rec.Body.Bytes())
		case rec.Code == 200:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("200 with invalid JSON: %s", rec.Body.Bytes())
			}
		case rec.Code >= 400 && rec.Code < 500:
			checkErrorBody(t, rec.Body.Bytes(), ep == epMessages || ep == epCountTokens)
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}
