package timeline_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

func openTimeline(t *testing.T, name string) *timeline.Timeline {
	t.Helper()
	tl, err := timeline.Open("../testdata/tapes/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl
}

func TestTimelineRowsAndSteps(t *testing.T) {
	tl := openTimeline(t, "agent-run.jbx")
	if tl.Len() != 98 || tl.Steps() != 5 {
		t.Fatalf("len %d steps %d", tl.Len(), tl.Steps())
	}
	if tl.StepOf(0) != 0 || tl.StepOf(20) != 0 || tl.StepOf(21) != 1 || tl.StepStart(1) != 21 || tl.StepStart(0) != 0 {
		t.Fatalf("steps: StepOf(20)=%d StepOf(21)=%d StepStart(1)=%d", tl.StepOf(20), tl.StepOf(21), tl.StepStart(1))
	}
	r := tl.Row(15)
	if r.Kind != tapefmt.KindLLMResponse || r.Tokens != 228 || !r.Priced || r.Cost <= 0 {
		t.Fatalf("row 15 = %+v", r)
	}
	if got := tl.Row(2).Summary; !strings.Contains(got, "/v1/chat/completions") {
		t.Fatalf("row 2 summary %q", got)
	}
	sum, err := timeline.Summarize("", tl.Tape())
	if err != nil {
		t.Fatal(err)
	}
	tok, usd := tl.Totals(tl.Len() - 1)
	if tok != sum.Usage.Total() || math.Abs(usd-sum.Cost) > 1e-12 {
		t.Fatalf("totals %d $%f, summary %d $%f", tok, usd, sum.Usage.Total(), sum.Cost)
	}
	if tok, _ := tl.Totals(14); tok != 0 {
		t.Fatalf("tokens before the first response = %d", tok)
	}
	if i := tl.FrameAt(tl.Duration()); i != tl.Len()-1 {
		t.Fatalf("FrameAt(end) = %d", i)
	}
}

func TestTimelineNavigation(t *testing.T) {
	tl := openTimeline(t, "agent-run.jbx")
	if i, ok := tl.Next(2, timeline.FindLLM, 1); !ok || i != 21 {
		t.Fatalf("next LLM after 2 = %d %v", i, ok)
	}
	if i, ok := tl.Next(21, timeline.FindLLM, -1); !ok || i != 2 {
		t.Fatalf("previous LLM before 21 = %d %v", i, ok)
	}
	// The answer at 15 asks for the tool call at 16: both are stops.
	if i, ok := tl.Next(0, timeline.FindTool, 1); !ok || i != 15 {
		t.Fatalf("next tool = %d %v", i, ok)
	}
	if i, ok := tl.Next(15, timeline.FindTool, 1); !ok || i != 16 {
		t.Fatalf("next tool after the answer = %d %v", i, ok)
	}
	if _, ok := tl.Next(0, timeline.FindError, 1); ok {
		t.Fatal("found an error on a clean run")
	}
	i, err := tl.Search(context.Background(), "UNICODE names", 0, 1)
	if err != nil || i < 0 {
		t.Fatalf("search: %d %v", i, err)
	}
	if !strings.Contains(strings.ToLower(tl.Row(i).Summary+string(mustDetail(t, tl, i).Payload)), "unicode") &&
		tl.Row(i).Kind != tapefmt.KindLLMRequest && tl.Row(i).Kind != tapefmt.KindLLMResponse {
		t.Fatalf("search hit %d (%s) does not hold the text", i, tl.Row(i).Kind)
	}
	// "src/step_03.py" is in a tool call's arguments, a file change and later requests.
	if j, _ := tl.Search(context.Background(), "step_03.py", 0, 1); j < 0 || j > 75 {
		t.Fatalf("search step_03.py = %d", j)
	}
	if j, _ := tl.Search(context.Background(), "no such text anywhere", 0, 1); j != -1 {
		t.Fatalf("search for nothing = %d", j)
	}
}

func mustDetail(t *testing.T, tl *timeline.Timeline, i int) *timeline.Detail {
	t.Helper()
	d, err := tl.Detail(i)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestTimelineDetail(t *testing.T) {
	tl := openTimeline(t, "agent-run.jbx")
	for _, i := range []int{21, 34} { // a request and its response show the same call
		c := mustDetail(t, tl, i).Call
		if c == nil || c.Request != 21 || c.Response != 34 {
			t.Fatalf("frame %d call = %+v", i, c)
		}
		if !strings.HasPrefix(c.System, "You are a careful coding agent") || len(c.Messages) != 4 ||
			c.Messages[1].Role != "user" || c.Messages[1].Tokens == 0 {
			t.Fatalf("context: system %q, messages %+v", c.System, c.Messages)
		}
		if strings.Join(c.Tools, ",") != "write_file,read_file" || !strings.HasPrefix(c.Answer, "so that tests pass") ||
			!strings.Contains(c.Answer, "→ write_file") || c.Usage.Total() == 0 {
			t.Fatalf("tools %v answer %q usage %+v", c.Tools, c.Answer, c.Usage)
		}
		half, done := c.Streamed(time.Duration(c.Chunks[3].At))
		if done || !strings.HasPrefix(c.Answer, half) || len(half) == 0 || len(half) >= len(c.Answer) {
			t.Fatalf("streamed at chunk 3: %q done=%v", half, done)
		}
		if all, done := c.Streamed(time.Hour); !done || all != c.Answer {
			t.Fatal("streamed to the end is not the answer")
		}
	}
	tool := mustDetail(t, tl, 18).Tool
	if tool == nil || tool.Name != "write_file" || tool.Call != 16 || tool.Output != "wrote 19 bytes" ||
		!strings.Contains(tool.Args, `"path": "src/step_00.py"`) {
		t.Fatalf("tool = %+v", tool)
	}
	d := mustDetail(t, tl, 17)
	if d.File == nil || d.File.Path != "src/step_00.py" || !strings.Contains(d.File.Diff, "+VALUE = 0") || len(d.Blobs) != 1 {
		t.Fatalf("file = %+v blobs %v", d.File, d.Blobs)
	}
}

func TestTimelineTornTape(t *testing.T) {
	tl := openTimeline(t, "torn.jbx")
	rec := tl.Recovered()
	if rec == nil || rec.FramesKept != tl.Len() || tl.Len() != 40 {
		t.Fatalf("recovered %+v, len %d", rec, tl.Len())
	}
}
