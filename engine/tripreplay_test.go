package engine

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestReplayAnswersARefusedCall: a call the circuit breaker refused is
// answered in replay as it was when recorded, whole (400, its JSON error
// with TripCode and the rule, Content-Length): it was a 400 without a
// body, cut off, which SDKs read as a broken connection. A tape from
// before refusals kept their body gets the answer built again from the
// message; one that keeps it gets its own bytes (the agent's name too).
func TestReplayAnswersARefusedCall(t *testing.T) {
	msg := llmwire.TripPrefix + " (cost): the run has cost $0.000030, past the cap of $0.000050; it was not sent"
	reqBody := []byte(`{"model":"gpt-4o-mini","messages":[],"max_tokens":40}`)
	for _, c := range []struct {
		name  string
		agent string
		kept  bool // the tape keeps the answer's header and body
	}{
		{"a tape from before", "", false},
		{"a tape that keeps the answer", "planner", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tripped.jbx")
			want, wantBody := tripAnswer(msg, "cost", c.agent)
			err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
				w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord})
				h, _ := w.PutBlob("req", reqBody)
				w.Append(0, tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
					Header: http.Header{"Content-Type": {"application/json"}}, Body: h, Size: int64(len(reqBody))})
				resp := tapefmt.LLMResponse{Status: http.StatusBadRequest, Error: msg}
				if c.kept {
					resp = want
					resp.Body, _ = w.PutBlob("resp", wantBody)
				}
				_, err := w.Append(0, resp)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			h, err := NewReplayHandler(openTape(t, path), reqmatch.Default(), 0)
			if err != nil {
				t.Fatal(err)
			}
			w := serveOne(h, "POST", "/openai/v1/chat/completions", string(reqBody))
			var got struct {
				Error struct{ Code, Rule, Agent, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusBadRequest {
				t.Fatalf("answered %d %q (%v); want 400 and the JSON error", w.Code, w.Body, err)
			}
			if got.Error.Code != TripCode || got.Error.Rule != "cost" || got.Error.Message != msg || got.Error.Agent != c.agent {
				t.Errorf("the error: %+v", got.Error)
			}
			if w.Header().Get("Content-Length") != strconv.Itoa(w.Body.Len()) || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("headers %v for %d bytes", w.Header(), w.Body.Len())
			}
			if c.kept && w.Body.String() != string(wantBody) {
				t.Errorf("body %q, recorded %q", w.Body, wantBody)
			}
		})
	}
}
