package diffview

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
)

// fixture is a small three-step run with multi-line prompts, and a fork of
// it that switches model at step 1, so its answers, tool arguments and file
// contents change from there on; the fork also reads a file first and skips
// the last write.
func fixture() (Timeline, Timeline) {
	run := func(name string, forked bool) Timeline {
		tl := Timeline{Name: name, Steps: 3, Duration: 4200 * time.Millisecond}
		convo := "system: You are a careful coding agent.\nuser: Refactor the config loader and keep the tests green."
		for i := range 3 {
			model := "gpt-4o-mini"
			answer := fmt.Sprintf("Step %d: I will update config.py so that tests pass.", i)
			args := fmt.Sprintf(`{"path": "src/config_%d.py", "content": "VALUE = %d"}`, i, i*i)
			if forked && i >= 1 {
				model = "gpt-4o"
				answer = fmt.Sprintf("Step %d: first I check the tests, then update config.py.", i)
				args = fmt.Sprintf(`{"path": "src/config_%d.py", "content": "VALUE = %d  # checked"}`, i, i*i)
			}
			tl.Frames = append(tl.Frames,
				Frame{Kind: "llm.request", Signature: "llm.request POST /v1/chat/completions",
					Title: "POST /v1/chat/completions " + model + " stream", Body: "model: " + model + "\n" + convo},
				Frame{Kind: "llm.response", Signature: "llm.response /v1/chat/completions", Title: "200 · 230 tok",
					Body: answer + "\n→ write_file " + args, Tokens: 230, Cost: 0.0004, Latency: 380 * time.Millisecond})
			if forked && i == 1 {
				tl.Frames = append(tl.Frames, Frame{Kind: "tool.call", Signature: "tool.call read_file",
					Title: `read_file {"path": "tests/test_config.py"}`, Body: `{"path": "tests/test_config.py"}`})
			}
			if forked && i == 2 {
				break
			}
			tl.Frames = append(tl.Frames,
				Frame{Kind: "tool.call", Signature: "tool.call write_file", Title: "write_file " + args, Body: args},
				Frame{Kind: "file.change", Signature: fmt.Sprintf("file.change src/config_%d.py", i),
					Title: fmt.Sprintf("write src/config_%d.py", i), Body: strings.TrimSuffix(strings.Split(args, `"content": "`)[1], `"}`)},
				Frame{Kind: "tool.result", Signature: "tool.result write_file", Title: `→ "wrote 10 bytes"`})
			convo += "\nassistant: " + answer + "\ntool: wrote 10 bytes"
		}
		for i := range tl.Frames {
			tl.Frames[i].Seq = 2 + i
			tl.Frames[i].Time = time.Duration(i) * 100 * time.Millisecond
		}
		return tl
	}
	return run("agent-run.jbx", false), run("fork.jbx", true)
}

func TestSideBySide(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, SideBySide(Compare(a, b), Options{Width: 150, Styles: PlainStyles()}))
}

func TestSideBySideNarrow(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, SideBySide(Compare(a, b), Options{Width: 80, Styles: PlainStyles()}))
}

func TestSideBySideAll(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, SideBySide(Compare(a, b), Options{Width: 150, All: true, Styles: PlainStyles()}))
}

func TestSideBySideANSI(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, SideBySide(Compare(a, b), Options{Width: 120, Styles: ANSIStyles()}))
}

func TestSideBySideIdentical(t *testing.T) {
	a, _ := fixture()
	golden.RequireEqual(t, SideBySide(Compare(a, a), Options{Width: 120, Styles: PlainStyles()}))
}

func TestUnified(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, Unified(Compare(a, b), Options{Styles: PlainStyles()}))
}

func TestUnifiedAll(t *testing.T) {
	a, b := fixture()
	golden.RequireEqual(t, Unified(Compare(a, b), Options{All: true, Styles: PlainStyles()}))
}

func TestReportJSON(t *testing.T) {
	a, b := fixture()
	out, err := json.MarshalIndent(Compare(a, b).Report(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, string(out)+"\n")
	var back Report
	if err := json.Unmarshal(out, &back); err != nil || back.Divergence == nil || back.Pairs[0].Op != Same {
		t.Fatalf("round trip: %v %+v", err, back.Divergence)
	}
}

// TestRenderersStayInWidth checks every side-by-side line against the width,
// over many widths, with wide runes, tabs and escape sequences in bodies.
func TestRenderersStayInWidth(t *testing.T) {
	a, b := fixture()
	// U+009B is the 8-bit CSI, U+202E turns the text around: they reached
	// the terminal from the diff (the frame view shows them as �).
	b.Frames[1].Body = "日本語のテキスト\tand a tab, \x1b[31mescape\x1b[0m, \u009b31m c1 csi, \u202edesrever and a very-long-unbreakable-word-" +
		strings.Repeat("x", 200)
	r := Compare(a, b)
	for w := MinWidth; w <= 200; w += 7 {
		for _, out := range []string{SideBySide(r, Options{Width: w, All: true, Styles: PlainStyles()}), Unified(r, Options{All: true})} {
			if strings.ContainsAny(out, "\x1b\u009b\u202e") {
				t.Fatalf("width %d: a raw control in %q", w, out)
			}
		}
		for l := range strings.SplitSeq(SideBySide(r, Options{Width: w, All: true, Styles: PlainStyles()}), "\n") {
			if got := (line{{l, clsPlain}}).width(); got > w {
				t.Fatalf("width %d: line is %d wide: %q", w, got, l)
			}
		}
	}
}

func TestMaxLinesCutsLongBodies(t *testing.T) {
	var a, b []string
	for i := range 30 {
		a = append(a, fmt.Sprintf("line %d", i))
		b = append(b, fmt.Sprintf("line %d changed", i))
	}
	left := Timeline{Name: "a", Frames: []Frame{{Kind: "file.change", Signature: "f", Title: "write f", Body: strings.Join(a, "\n")}}}
	right := Timeline{Name: "b", Frames: []Frame{{Kind: "file.change", Signature: "f", Title: "write f", Body: strings.Join(b, "\n")}}}
	r := Compare(left, right)
	for _, out := range []string{SideBySide(r, Options{MaxLines: 5}), Unified(r, Options{MaxLines: 5})} {
		if !strings.Contains(out, "⋯ 25 more lines") || strings.Contains(out, "line 5 ") {
			t.Fatalf("not cut at 5 lines:\n%s", out)
		}
	}
	if out := Unified(r, Options{All: true}); !strings.Contains(out, "line 29 changed") {
		t.Fatalf("All cut the body:\n%s", out)
	}
}
