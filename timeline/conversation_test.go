package timeline

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestConversation: each call is matched to the previous call of its own
// conversation (two agents interleave), its new messages counted; a
// conversation that was cut has no previous call, a repeated request has
// nothing new; the context's fill is the provider's count against the
// model's window where the answer is on the tape, an estimate where not.
func TestConversation(t *testing.T) {
	type msg struct{ Role, Content string }
	calls := []struct {
		system string
		msgs   []msg
		in     int64 // input tokens of the answer; 0: no answer on the tape
	}{
		{"plan", []msg{{"user", "task"}}, 100},                                                                // frame 1
		{"code", []msg{{"user", "write a.py"}}, 200},                                                          // 3
		{"plan", []msg{{"user", "task"}, {"assistant", "step one"}, {"user", "go on"}}, 300},                  // 5
		{"code", []msg{{"user", "write a.py"}, {"assistant", "done"}, {"tool", "ok"}}, 0},                     // 7
		{"plan", []msg{{"user", "task"}, {"assistant", "step one"}, {"user", "go on"}}, 300},                  // 9
		{"plan", []msg{{"user", "summary of the task"}, {"assistant", "step one"}}, 120},                      // 11
		{"code", []msg{{"user", "write a.py"}, {"assistant", "done"}, {"tool", "ok"}, {"user", "thanks"}}, 0}, // 13
	}
	path := filepath.Join(t.TempDir(), "conv.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i, c := range calls {
			all := append([]msg{{"system", c.system}}, c.msgs...)
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": all})
			h, err := w.PutBlob("", body)
			if err != nil {
				return err
			}
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o", Body: h})
			if c.in > 0 {
				w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: "gpt-4o", Usage: tapefmt.Usage{Input: c.in, Output: 5}})
			} else {
				w.Append(0, tapefmt.Clock{})
			}
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
	want := []struct{ since, new int }{
		{-1, 0}, {-1, 0}, // each conversation's first call
		{1, 2},  // plan's second call continues the first: its two last messages are new
		{3, 2},  // code's, past plan's call in between
		{5, 4},  // a repeat: nothing new (New is the count of messages, system included)
		{-1, 0}, // plan cut its first message: no previous call by the prefix rule
		{7, 4},  // code goes on from its call without an answer
	}
	for i, w := range want {
		frame := 1 + 2*i
		d, err := tl.Detail(frame)
		if err != nil {
			t.Fatal(err)
		}
		c := d.Call
		if c.Since != w.since || c.New != w.new {
			t.Errorf("frame %d: since %d, new from %d; want %d, %d", frame, c.Since, c.New, w.since, w.new)
		}
		if c.Window != 128000 {
			t.Errorf("frame %d: window %d, want gpt-4o's 128000", frame, c.Window)
		}
		if in := calls[i].in; (in > 0) != c.FillCounted || (in > 0 && c.Fill != in) || (in == 0 && c.Fill == 0) {
			t.Errorf("frame %d: fill %d (counted %v), want the answer's %d or an estimate", frame, c.Fill, c.FillCounted, in)
		}
	}
}
