package llmwire

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// TestResponseTextStreamEqualsWhole checks that the text assembled from each
// API's stream equals the text of its whole-body answer, on the scripted
// model's real wire formats, and that request bodies render as messages.
func TestResponseTextStreamEqualsWhole(t *testing.T) {
	t.Parallel()
	sim := llmsim.New(llmsim.DefaultScript())
	cases := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"demo-large","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"write a poem"}]`},
		{"/v1/responses", `{"model":"demo-large","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"write a poem"}]}]`},
		{"/v1/messages", `{"model":"demo-large","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"write a poem"}]`},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			wantReq := "model: demo-large\nsystem: Be brief.\nuser: write a poem\n"
			if c.path == "/v1/messages" {
				wantReq = "model: demo-large\nmax_tokens: 100\nsystem: Be brief.\nuser: write a poem\n"
			}
			if got := RequestText([]byte(c.body + "}")); got != wantReq {
				t.Errorf("request text %q, want %q", got, wantReq)
			}
			whole := ResponseText(post(t, sim, c.path, c.body+"}"))
			stream := ResponseText(post(t, sim, c.path, c.body+`,"stream":true}`))
			if whole != stream || !strings.HasPrefix(whole, "I'll write the poem to poem.txt first.\n→ write_file {") ||
				!strings.Contains(whole, `A coin drops in the dark of the bar`) {
				t.Fatalf("whole %q\nstream %q", whole, stream)
			}
		})
	}
}

func post(t *testing.T, h http.Handler, path, body string) []byte {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test")
	req.Header.Set("x-api-key", "test")
	req.Header.Set("anthropic-version", "2023-06-01")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func TestRequestParamsAllRead(t *testing.T) {
	for _, k := range requestParams {
		var req wireRequest
		if err := json.Unmarshal([]byte(`{"`+k+`": 1}`), &req); err != nil || string(req.param(k)) != "1" {
			t.Errorf("parameter %s is not read (%v)", k, err)
		}
	}
}
