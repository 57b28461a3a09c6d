package timeline_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestProvidersAndCountedUsage: a Gemini call (usage in usageMetadata,
// model in the path) and an OpenAI stream without usage, as the recorder
// writes them (no usage on the frames), are read by every view: ls's
// summary, the bill, the turntable's rows, totals and call detail, the
// counted call marked estimated.
func TestProvidersAndCountedUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(s string) tapefmt.Hash { h, _ := w.PutBlob("b", []byte(s)); return h }
	w.Append(0, tapefmt.LLMRequest{Call: 1, Provider: "gemini", Method: "POST", Path: "/v1beta/models/gemini-2.0-flash:generateContent",
		Body: put(`{"contents":[{"role":"user","parts":[{"text":"Name a colour"}]}]}`)})
	w.Append(0, tapefmt.LLMResponse{Call: 1, Status: 200, Body: put(`{"candidates":[{"content":{"parts":[{"text":"Teal"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":1000}}`)})
	w.Append(0, tapefmt.LLMRequest{Call: 2, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o-mini", Stream: true,
		Body: put(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello world"}]}`)})
	w.Append(0, tapefmt.LLMResponse{Call: 2, Status: 200, Body: put("data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello world\"}}]}\n\ndata: [DONE]\n\n")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	s, err := timeline.Summarize(path, tp)
	if err != nil {
		t.Fatal(err)
	}
	// gemini-2.0-flash: 1000 in at $0.10/M, 1000 out at $0.40/M; the
	// counted call: "user", "hello world" (3 tokens) + 3 + 3 in, 2 out.
	if s.Usage.Input != 1009 || s.Usage.Output != 1002 || s.Estimated != 1 || len(s.Unpriced) != 0 {
		t.Errorf("summary: usage %+v, estimated %d, unpriced %v", s.Usage, s.Estimated, s.Unpriced)
	}
	bill, err := timeline.MakeBill(tp, timeline.ByModel)
	if err != nil {
		t.Fatal(err)
	}
	if bill.Total.Estimated != 1 || len(bill.Rows) != 2 {
		t.Errorf("bill: %+v", bill)
	}
	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// The search finds the Gemini answer's words, which are not in
	// OpenAI's or Anthropic's shape.
	if i, err := tl.Search(context.Background(), "Teal", 0, 1); err != nil || tl.Row(i).Kind != tapefmt.KindLLMResponse {
		t.Errorf("search for the Gemini answer: frame %d, %v", i, err)
	}
	defer tl.Close()
	if r := tl.Row(1); r.Tokens != 2000 || !r.Priced || r.Estimated {
		t.Errorf("gemini row: %+v", r)
	}
	if r := tl.Row(3); r.Tokens != 11 || !r.Estimated {
		t.Errorf("counted row: %+v", r)
	}
	if tl.Estimated(3) != 1 || tl.Estimated(1) != 0 {
		t.Errorf("running estimated: %d, %d", tl.Estimated(1), tl.Estimated(3))
	}
	c := mustDetail(t, tl, 0).Call
	if c.Answer != "Teal" || c.Model != "gemini-2.0-flash" || !strings.Contains(c.Provider, "gemini") {
		t.Errorf("gemini detail: answer %q model %q", c.Answer, c.Model)
	}
}
