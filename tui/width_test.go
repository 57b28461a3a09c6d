package tui

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-runewidth"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// hostileText is text whose width terminals disagree on: skin-tone
// modifiers, VS16, ZWJ sequences, flags, a subdivision flag, a keycap,
// CJK and combining marks.
const hostileText = "All tests pass 👍🏽 ❤️ 👨‍👩‍👧‍👦 🇫🇷🇯🇵 🏴󠁧󠁢󠁳󠁣󠁴󠁿 1️⃣ 漢字テスト e\u0301a\u0308 🧑🏿‍💻 ✌🏻 ☺️"

// writeHostileTape writes a short run whose output, LLM call, tool call
// and error all carry hostileText, repeated so lines are long.
func writeHostileTape(t testing.TB, path, variant string) {
	t.Helper()
	long := strings.Repeat(hostileText+" ", 6) + variant
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		at := time.Duration(0)
		app := func(p tapefmt.Payload) {
			at += time.Millisecond
			w.AppendAt(at, 0, p)
		}
		app(tapefmt.RunStart{Argv: []string{"agent", hostileText}})
		app(tapefmt.Output{Fd: 1, Data: []byte(long + "\n" + hostileText + "\n")})
		for call := range 2 {
			req, _ := json.Marshal(map[string]any{"model": "m👍🏽", "messages": []map[string]string{
				{"role": "system", "content": long}, {"role": "user", "content": hostileText + variant}}})
			rb, err := w.PutBlob("request", req)
			if err != nil {
				return err
			}
			app(tapefmt.LLMRequest{Call: uint64(call), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: rb, Size: int64(len(req)), Model: "m👍🏽"})
			resp, _ := json.Marshal(map[string]any{"model": "m👍🏽", "choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": long}}}})
			sb, err := w.PutBlob("response", resp)
			if err != nil {
				return err
			}
			app(tapefmt.LLMResponse{Call: uint64(call), Status: 200, Body: sb, Size: int64(len(resp)), Model: "m👍🏽", Usage: tapefmt.Usage{Input: 10, Output: 5}})
			args, _ := json.Marshal(map[string]string{"text": long})
			app(tapefmt.ToolCall{ID: fmt.Sprint(call), Name: "say👍🏽", Args: args, Source: "llm"})
			app(tapefmt.ToolResult{ID: fmt.Sprint(call), Result: args})
		}
		app(tapefmt.LLMRequest{Call: 2, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "m👍🏽"})
		app(tapefmt.LLMResponse{Call: 2, Status: 502, Error: "upstream said " + long})
		_, err := w.AppendAt(at+time.Millisecond, 0, tapefmt.RunEnd{ExitCode: 1, Error: long})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// widestCells is the width of s on the terminal that draws it widest:
// tmux draws a skin-tone modifier as two more columns, some terminals
// widen a symbol followed by VS16 and draw each regional indicator two
// columns wide, none draws a zero-width joiner.
func widestCells(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r >= 0x1F3FB && r <= 0x1F3FF, r >= 0x1F1E6 && r <= 0x1F1FF:
			n += 2
		case r == 0xFE0F:
			n++
		default:
			n += runewidth.RuneWidth(r)
		}
	}
	return n
}

// checkFits fails t for every line of view wider than w on any terminal,
// or when view has more than h lines.
func checkFits(t *testing.T, what, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > h {
		t.Errorf("%s at %dx%d: %d lines", what, w, h, len(lines))
	}
	for i, l := range lines {
		if n := widestCells(l); n > w {
			t.Errorf("%s at %dx%d: line %d is %d cells wide: %q", what, w, h, i, n, l)
			return
		}
	}
}

// TestHostileTextFits renders a tape full of text terminals disagree on,
// at sizes from 40x12 to 250x70, on every frame, in the frame view, the
// raw view, the step rows and the diff pane: no line is wider than the
// screen on any terminal (issue 33: 👍🏽 drawn 4 columns wide, counted 2,
// wrapped every line that held it and scrolled the screen).
func TestHostileTextFits(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jbx"), filepath.Join(dir, "b.jbx")
	writeHostileTape(t, a, "")
	writeHostileTape(t, b, " changed 👍🏿")
	for _, size := range [][2]int{{40, 12}, {57, 17}, {80, 24}, {121, 33}, {200, 60}, {250, 70}} {
		w, h := size[0], size[1]
		d := newDeck(t, w, h, a, b)
		for i := range 14 {
			checkFits(t, fmt.Sprintf("frame %d", i), d.View(), w, h)
			press(d, runes("r"))
			checkFits(t, fmt.Sprintf("frame %d raw", i), d.View(), w, h)
			press(d, runes("r"), runes("l"))
		}
		press(d, runes("S"))
		checkFits(t, "steps", d.View(), w, h)
		press(d, runes("S"), runes("d"))
		checkFits(t, "diff", d.View(), w, h)
		for range 5 {
			press(d, tea.KeyMsg{Type: tea.KeyPgDown})
			checkFits(t, "diff paged", d.View(), w, h)
		}
	}
}
