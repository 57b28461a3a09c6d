package timeline

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestConversationTrimmed: an agent that keeps its context short (it drops
// its oldest turns, or folds them into a summary) still has a previous
// call on every call, its new messages the turn's (issue 33: after frame
// ~2000 of a long tape every call said "first call of this conversation").
func TestConversationTrimmed(t *testing.T) {
	type msg struct{ Role, Content string }
	var history []msg
	path := filepath.Join(t.TempDir(), "trim.jbx")
	const calls = 30
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i := range calls {
			history = append(history, msg{"user", fmt.Sprintf("turn %d", i)}, msg{"assistant", fmt.Sprintf("answer %d", i)})
			ctx := history
			if len(ctx) > 8 { // keep the last 8 messages, after a summary of the rest
				ctx = append([]msg{{"user", fmt.Sprintf("summary of turns 0 to %d", i-4)}}, ctx[len(ctx)-8:]...)
			}
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": append([]msg{{"system", "agent"}}, ctx...)})
			h, err := w.PutBlob("", body)
			if err != nil {
				return err
			}
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o", Body: h})
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for i := 1; i < calls; i++ {
		d, err := tl.Detail(1 + i)
		if err != nil {
			t.Fatal(err)
		}
		c := d.Call
		if c.Since != i || len(c.Messages)-c.New != 2 || c.Messages[c.New].Text != fmt.Sprintf("turn %d", i) {
			t.Errorf("call %d: since frame %d, new from %d of %d; want frame %d and its last two messages", i, c.Since, c.New, len(c.Messages), i)
		}
	}
}
