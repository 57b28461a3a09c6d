package export

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestSpansGeminiThroughTheProxy: a Gemini call the forward proxy
// recorded (no base URL in the run's start, the host on the request) is
// a chat span whose server is the host the agent asked for and whose
// output messages hold the answer's text, read in Gemini's shape.
func TestSpansGeminiThroughTheProxy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemini.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{Created: created}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"python", "agent.py"}, Mode: tapefmt.ModeRecord})
		req, _ := w.PutBlob("req", []byte(`{"contents":[{"role":"user","parts":[{"text":"capital of France?"}]}]}`))
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "gemini", Method: "POST", Scheme: "https", Host: "generativelanguage.googleapis.com",
			Path: "/v1beta/models/gemini-2.0-flash:generateContent", Body: req, Model: "gemini-2.0-flash"})
		resp, _ := w.PutBlob("resp", []byte(`{"candidates":[{"content":{"parts":[{"text":"Paris."}],"role":"model"}}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2}}`))
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Body: resp, Usage: tapefmt.Usage{Input: 7, Output: 2}})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var chat *span
	c := newConverter(Options{IncludeContent: true}, tp.ID(), tp.Created(), tapeBlobs(tp), func(s *span) {
		if s.id == frameSpanID(1) {
			chat = s
		}
	}, func(measure) {})
	for f := range tp.All() {
		c.frame(f)
	}
	if chat == nil {
		t.Fatal("no span for the Gemini call")
	}
	a := attrs(chat)
	for k, v := range map[string]string{"gen_ai.provider.name": "gcp.gemini", "server.address": "generativelanguage.googleapis.com",
		"server.port": "443", "gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "2"} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	if !strings.Contains(a["gen_ai.output.messages"], "Paris.") {
		t.Errorf("output messages %q lack the answer", a["gen_ai.output.messages"])
	}
}
