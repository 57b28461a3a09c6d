package tui

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// writeBigAnswers writes a run of three calls whose answers are 1.1 MiB
// of text ending in "THE-END" (past the 1 MiB the screen shows, and the
// 1 MiB a body was once cut to): plain JSON, streamed, and one line.
func writeBigAnswers(t *testing.T) string {
	t.Helper()
	text := strings.Repeat("lorem ipsum dolor sit amet\n", 1126<<10/27) + "THE-END"
	plain, _ := json.Marshal(map[string]any{"choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": text}}}})
	var sse strings.Builder
	for i := 0; i < len(text); i += 64 << 10 {
		part, _ := json.Marshal(text[i:min(i+64<<10, len(text))])
		fmt.Fprintf(&sse, "data: {\"choices\":[{\"delta\":{\"content\":%s}}]}\n\n", part)
	}
	sse.WriteString("data: [DONE]\n\n")
	path := filepath.Join(t.TempDir(), "big.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
		line, _ := json.Marshal(map[string]any{"choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": strings.ReplaceAll(text, "\n", " ")}}}})
		for call, body := range []string{string(plain), sse.String(), string(line)} {
			h, err := w.PutBlob("response", []byte(body))
			if err != nil {
				return err
			}
			w.AppendAt(time.Millisecond, 0, tapefmt.LLMRequest{Call: uint64(call), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Stream: call == 1})
			w.AppendAt(2*time.Millisecond, 0, tapefmt.LLMResponse{Call: uint64(call), Status: 200, Body: h, Size: int64(len(body))})
		}
		_, err := w.AppendAt(3*time.Millisecond, 0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBigAnswer: an answer over 1 MiB shows (issue 33: its body was cut to
// 1 MiB before its JSON was parsed, and the answer showed as empty), the
// screen says where it is cut and how to see all of it, and the frame
// taken out (o, v, w) holds all of it, streamed or not.
func TestBigAnswer(t *testing.T) {
	d := newDeck(t, 120, 40, writeBigAnswers(t))
	for _, seq := range []string{"2", "4", "6"} {
		press(d, runes("g"))
		typeText(d, seq)
		press(d, keyEnter)
		if v := d.View(); !strings.Contains(v, "lorem ipsum") {
			t.Errorf("frame %s: the answer does not show:\n%s", seq, v)
		}
		d.frame.vp.GotoBottom()
		if v := d.View(); !strings.Contains(v, "cut here on screen") || !strings.Contains(v, "o pages the") {
			t.Errorf("frame %s: the screen does not say the answer is cut:\n%s", seq, v)
		}
		if text := d.frameText(); !strings.Contains(text, "lorem ipsum") || !strings.Contains(text, "THE-END") || strings.Contains(text, "cut here") {
			t.Errorf("frame %s: the frame taken out is not whole (%d bytes, ends %q)", seq, len(text), text[max(len(text)-200, 0):])
		}
	}
}
