package timeline

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestStepsCountAlike: ls (Summarize), diff (ForDiff) and the turntable
// (Timeline.StepCount) count a run's steps alike: the whole steps, and
// the one the run ended in after its last call when that was never
// committed (the recorder closes a step at the next call: ls and diff
// said 9 steps where the turntable said 10 for an agent of 10 calls).
// A run of one call commits no step and has one, step 0, where cost --by
// step bills its call (MakeBill): all three said 0 steps. A run without a
// call has none.
func TestStepsCountAlike(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls int
		tail  []tapefmt.Payload // after the last call's answer
		want  int
	}{
		{"ended in an open step", 3, []tapefmt.Payload{tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("done\n")}, tapefmt.RunEnd{}}, 3},
		{"the end right after the last commit", 3, nil, 3},
		{"one call", 1, []tapefmt.Payload{tapefmt.RunEnd{}}, 1},
		{"one call, then output", 1, []tapefmt.Payload{tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("done\n")}, tapefmt.RunEnd{}}, 1},
		{"no call", 0, []tapefmt.Payload{tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("done\n")}, tapefmt.RunEnd{}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.jbx")
			err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
				w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
				for i := range c.calls {
					if i > 0 {
						if _, err := w.Commit(); err != nil {
							return err
						}
					}
					w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o"})
					w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: "gpt-4o"})
				}
				if c.tail == nil { // the last step committed, then the end
					if _, err := w.Commit(); err != nil {
						return err
					}
					c.tail = []tapefmt.Payload{tapefmt.RunEnd{}}
				}
				for _, p := range c.tail {
					if _, err := w.Append(0, p); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			tp, err := tapefmt.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Close()
			s, err := Summarize(path, tp)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ForDiff(tp, "run")
			if err != nil {
				t.Fatal(err)
			}
			if tl.StepCount() != c.want || s.Steps != c.want || d.Steps != c.want {
				t.Errorf("steps: turntable %d, ls %d, diff %d; want %d", tl.StepCount(), s.Steps, d.Steps, c.want)
			}
			bill, err := MakeBill(tp, ByStep)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range bill.Rows {
				if step, err := strconv.Atoi(r.Key); err != nil || step < 1 || step > s.Steps { // from 1, as the turntable numbers them
					t.Errorf("cost --by step bills calls at step %q, past the %d steps ls counts", r.Key, s.Steps)
				}
			}
		})
	}
}
