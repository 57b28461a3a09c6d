package tui

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestResponseOpensAtTheAnswer: a response frame opens scrolled to its
// answer, the context above it (k or pgup scrolls up to it); a request
// frame opens at its top; going away and back scrolls to the answer again.
func TestResponseOpensAtTheAnswer(t *testing.T) {
	d := newDeck(t, 120, 24, agentRun)
	tl := d.tracks[0].tl
	resp := -1
	for i := range tl.Len() {
		if k, _ := tl.KindAt(i); k == timeline.KindLLMResponse && resp < 0 && i > 20 {
			resp = i
		}
	}
	gotoFrame := func(i int) {
		press(d, runes("g"))
		typeText(d, strconv.Itoa(i))
		press(d, keyEnter)
	}
	firstLine := func() string { return strings.Split(d.frame.View(), "\n")[1] }
	gotoFrame(resp)
	if !strings.Contains(firstLine(), "response · 200") || d.frame.vp.YOffset == 0 {
		t.Fatalf("frame %d opens at %q:\n%s", resp, firstLine(), d.frame.View())
	}
	gotoFrame(resp - 1)
	if d.frame.vp.YOffset != 0 {
		t.Fatalf("frame %d (not a response) opens scrolled to line %d", resp-1, d.frame.vp.YOffset)
	}
	gotoFrame(resp)
	if !strings.Contains(firstLine(), "response · 200") {
		t.Fatalf("back at frame %d: %q", resp, firstLine())
	}
}

// TestResponseOpensAtTheAnswerPastTheCut: a response whose request's
// context runs past the lines the frame view lays out opened scrolled to
// an answer it had cut, on blank lines, and paging down ended before it.
// The context is cut in its middle instead: the answer is there.
func TestResponseOpensAtTheAnswerPastTheCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.jbx")
	context := strings.Repeat("a line of the long context\n", 3*maxFrameLines)
	req, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": context}}})
	resp := []byte(`{"model":"gpt-4o","choices":[{"message":{"role":"assistant","content":"THE ANSWER"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}`)
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		rh, _ := w.PutBlob("req", req)
		sh, _ := w.PutBlob("resp", resp)
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o", Body: rh})
		_, err := w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Model: "gpt-4o", Body: sh})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 120, 24, path)
	press(d, runes("g"))
	typeText(d, "2")
	press(d, keyEnter)
	if view := d.frame.View(); !strings.Contains(view, "THE ANSWER") {
		t.Fatalf("the response frame does not show its answer:\n%s", view)
	}
}
