package tui

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// bigTapeMB is the size of the tape BenchmarkOpenFirstScreen opens.
var bigTapeMB = flag.Int("tui.bigtape", 1024, "size in MB of the tape BenchmarkOpenFirstScreen builds and opens")

// writeTape writes a synthetic agent run of about frames frames: steps of
// an LLM call (request and streamed SSE response as blobs, the streamed
// words echoed as output), a tool call, a file write and its result.
// fileBytes adds an incompressible file of that size to every step, to
// make a tape big in bytes without making it long in frames. The tape is
// verified in full once written, before any benchmark times it.
func writeTape(tb testing.TB, path string, frames, fileBytes int) {
	tb.Helper()
	t := time.Duration(0)
	w, err := tapefmt.Create(path, tapefmt.Options{Sync: tapefmt.SyncNever, Now: func() time.Duration { t += 3 * time.Millisecond; return t }})
	if err != nil {
		tb.Fatal(err)
	}
	must := func(_ any, err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(w.Append(0, tapefmt.RunStart{Argv: []string{"python", "agent.py"}, Mode: "record"}))
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, fileBytes)
	for step := 0; int(w.Len()) < frames-20; step++ {
		req, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": true, "messages": []map[string]string{
			{"role": "system", "content": "You are a careful coding agent."},
			{"role": "user", "content": fmt.Sprintf("Step %d: refactor the config loader and keep the tests green.", step)}}})
		body, err := w.PutBlob("request", req)
		must(nil, err)
		must(w.Append(0, tapefmt.LLMRequest{Call: uint64(step), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: body, Model: "gpt-4o-mini", Stream: true}))
		sse := ""
		for i := range 12 {
			word := fmt.Sprintf("word%d ", (step*7+i)%50)
			sse += fmt.Sprintf(`data: {"choices":[{"delta":{"content":%q}}]}`+"\n\n", word)
			must(w.Append(0, tapefmt.Output{Fd: 1, Data: tapefmt.Bytes(word)}))
		}
		resp, err := w.PutBlob("response", []byte(sse+"data: [DONE]\n\n"))
		must(nil, err)
		must(w.Append(0, tapefmt.LLMResponse{Call: uint64(step), Status: 200, Body: resp, Model: "gpt-4o-mini",
			Usage: tapefmt.Usage{Input: 300 + int64(step%100), Output: 32}}))
		args := fmt.Sprintf(`{"path":"src/step_%05d.py"}`, step)
		must(w.Append(0, tapefmt.ToolCall{ID: fmt.Sprint(step), Name: "write_file", Args: json.RawMessage(args), Source: "llm"}))
		content := []byte(fmt.Sprintf("VALUE = %d\n", step))
		if fileBytes > 0 {
			for i := range random {
				random[i] = byte(rng.Uint32())
			}
			content = random
		}
		file, err := w.PutBlob(fmt.Sprint("file", step), content)
		must(nil, err)
		must(w.Append(0, tapefmt.FileChange{Op: "write", Path: fmt.Sprintf("src/step_%05d.py", step), Body: file, Size: int64(len(content))}))
		must(w.Append(0, tapefmt.ToolResult{ID: fmt.Sprint(step), Result: json.RawMessage(`"ok"`)}))
		must(w.Commit())
	}
	must(w.Append(0, tapefmt.RunEnd{}))
	must(nil, w.Close())
	tapetest.Verify(tb, path)
}

// checkShown fails the benchmark unless the frame view read the frame it
// shows: a benchmark that times a screen saying "cannot read this frame"
// measures nothing.
func checkShown(b *testing.B, d *Deck) {
	if d.frame.err != nil || d.frame.detail == nil {
		b.Fatalf("frame %d does not read: %v", d.frame.seq, d.frame.err)
	}
}

// checkFrames fails the benchmark unless every frame marked in shown
// decodes, with every blob it names.
func checkFrames(b *testing.B, tl *timeline.Timeline, shown []bool) {
	b.Helper()
	tp := tl.Tape()
	for i, ok := range shown {
		if !ok {
			continue
		}
		f, err := tp.Frame(i)
		if err != nil {
			b.Fatalf("frame %d: %v", i, err)
		}
		p, err := f.Decode()
		if err != nil {
			b.Fatalf("frame %d (%s) does not decode: %v", i, f.Kind, err)
		}
		for _, h := range tapefmt.BlobRefs(p) {
			if _, err := tp.Blob(h); err != nil {
				b.Fatalf("frame %d (%s): blob %s: %v", i, f.Kind, h.Short(), err)
			}
		}
	}
}

// BenchmarkKeyToFrame is one key press on a 100,000-frame tape, from the
// key message to the rendered screen (Update, then View) at 160x48: the
// needle moves one frame on, and every 50th press a step on, through the
// whole tape.
func BenchmarkKeyToFrame(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long.jbx")
	writeTape(b, path, 100_000, 0)
	d := New([]string{path}, testOptions())
	defer d.Close()
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	_ = d.View()
	shown := make([]bool, d.tracks[0].tl.Len())
	b.ResetTimer()
	for i := range b.N {
		k := keyRight
		switch {
		case cursor(d) >= d.tracks[0].tl.Len()-1:
			k = keyHome
		case i%50 == 0:
			k = keyShiftRight
		}
		d.Update(k)
		_ = d.View()
		checkShown(b, d)
		shown[d.frame.seq] = true
	}
	b.StopTimer()
	checkFrames(b, d.tracks[0].tl, shown)
	b.ReportMetric(float64(d.tracks[0].tl.Len()), "frames")
}

// BenchmarkKeyToFrameFolded is BenchmarkKeyToFrame with output folded and
// a filter on (LLM calls and tool calls): each press moves a row on, so
// through folded runs and past hidden frames.
func BenchmarkKeyToFrameFolded(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long.jbx")
	writeTape(b, path, 100_000, 0)
	d := New([]string{path}, testOptions())
	defer d.Close()
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tv := d.tracks[0]
	tv.view = timeline.ViewOptions{Fold: true, Only: timeline.ClassLLM | timeline.ClassTools}
	tv.project()
	_ = d.View()
	b.ResetTimer()
	for i := range b.N {
		k := keyRight
		switch {
		case tv.rowOf(cursor(d)) >= tv.n()-1:
			k = keyHome
		case i%50 == 0:
			k = keyShiftRight
		}
		d.Update(k)
		_ = d.View()
		checkShown(b, d)
	}
	b.ReportMetric(float64(tv.n()), "rows")
}

// BenchmarkFoldFilter is listing the rows of a 100,000-frame tape's view:
// output folded, then folded and filtered (LLM and tool calls), then one
// row per step.
func BenchmarkFoldFilter(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long.jbx")
	writeTape(b, path, 100_000, 0)
	tl, err := timeline.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	for _, c := range []struct {
		name string
		o    timeline.ViewOptions
	}{
		{"fold", timeline.ViewOptions{Fold: true}},
		{"fold+filter", timeline.ViewOptions{Fold: true, Only: timeline.ClassLLM | timeline.ClassTools}},
		{"steps", timeline.ViewOptions{Steps: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				rows, err := tl.View(context.Background(), c.o)
				if err != nil || len(rows) == 0 {
					b.Fatal(rows, err)
				}
			}
		})
	}
}

// BenchmarkOpenFirstScreen opens a big tape (-tui.bigtape MB, default
// 1 GB, of which 4 MB incompressible files) and draws the first screen:
// timeline.Open (footer, frame index, steps) and the deck's first
// View. The file is in the page cache, as it is after it was just written.
func BenchmarkOpenFirstScreen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.jbx")
	const file = 4 << 20
	steps := *bigTapeMB << 20 / file
	start := time.Now()
	writeTape(b, path, steps*19+21, file)
	b.Logf("built a %d MB tape in %s", *bigTapeMB, time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for range b.N {
		d := New([]string{path}, testOptions())
		d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		_ = d.View()
		checkShown(b, d)
		d.Close()
	}
}

// BenchmarkOpenLongFirstScreen opens a 100,000-frame tape to its first
// screen: opening costs the frame index (16 bytes a frame), not the bytes.
func BenchmarkOpenLongFirstScreen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long.jbx")
	writeTape(b, path, 100_000, 0)
	b.ResetTimer()
	for range b.N {
		d := New([]string{path}, testOptions())
		d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		_ = d.View()
		checkShown(b, d)
		d.Close()
	}
}

// BenchmarkSearch is a search on a 100,000-frame tape, from the needle at
// frame 0, through the deck as a user runs it (/, the query, enter): the
// time to the first hit (a query first matched in the middle of the
// tape), to the count of its matches (match x/y), and to "no match". The
// peer, measured in the same run, is a search read one frame after the
// other (SearchReport, then Matches for the count, as the deck did before
// it swept); ratios are the peer's time over the deck's. A search after
// the first finds the frames' text kept (warm-no-match-ms: a third query
// no frame holds).
func BenchmarkSearch(b *testing.B) {
	path := filepath.Join(b.TempDir(), "long.jbx")
	writeTape(b, path, 100_000, 0)
	const hit, none = "step_02600.py", "zebra"
	var first, counted, nomatch, warm, peerFirst, peerCount, peerNone time.Duration
	run := func(d *Deck, q string) (toHit, toEnd time.Duration) {
		d.tracks[0].SetCursor(0)
		d.found, d.lastQuery = nil, ""
		press(d, runes("/"))
		for _, r := range q {
			d.Update(runes(string(r)))
		}
		start := time.Now()
		_, cmd := d.Update(keyEnter)
		for cmd != nil {
			msg := cmd()
			if msg == nil {
				break
			}
			_, cmd = d.Update(msg)
			if toHit == 0 && strings.Contains(d.status, "found in frame") {
				toHit = time.Since(start)
			}
		}
		return toHit, time.Since(start)
	}
	b.ResetTimer()
	for range b.N {
		// Each cold figure on a deck of its own: nothing read before.
		open := func() *Deck {
			d := New([]string{path}, testOptions())
			d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
			return d
		}
		d := open()
		h, c := run(d, hit)
		if h == 0 || d.found == nil || d.found.total != 2 {
			b.Fatalf("search for %q: status %q", hit, d.status)
		}
		d.Close()
		d = open()
		_, n := run(d, none)
		if !strings.Contains(d.status, "no frame holds") {
			b.Fatalf("search for %q: status %q", none, d.status)
		}
		_, wn := run(d, "quagga")
		if !strings.Contains(d.status, "no frame holds") {
			b.Fatalf("search for quagga: status %q", d.status)
		}
		first, counted, nomatch, warm = first+h, counted+c, nomatch+n, warm+wn
		d.Close()

		// The peer reads each time from a timeline of its own, as cold.
		b.StopTimer()
		cold := func() *timeline.Timeline {
			tl, err := timeline.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			return tl
		}
		tl := cold()
		start := time.Now()
		r, _ := tl.SearchReport(context.Background(), hit, 0, 1)
		peerFirst += time.Since(start)
		tl.Close()
		tl = cold()
		if _, total, _ := tl.Matches(context.Background(), hit, maxMatches); r.Frame < 0 || total != 2 {
			b.Fatal("the peer finds no match")
		}
		peerCount += time.Since(start)
		tl.Close()
		tl = cold()
		start = time.Now()
		if r, _ := tl.SearchReport(context.Background(), none, 0, 1); r.Frame >= 0 {
			b.Fatal("the peer finds zebra")
		}
		peerNone += time.Since(start)
		tl.Close()
		b.StartTimer()
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(ms(first), "first-hit-ms")
	b.ReportMetric(ms(counted), "counted-ms")
	b.ReportMetric(ms(nomatch), "no-match-ms")
	b.ReportMetric(ms(warm), "warm-no-match-ms")
	b.ReportMetric(float64(peerFirst)/float64(first), "first-hit-x")
	b.ReportMetric(float64(peerCount)/float64(counted), "counted-x")
	b.ReportMetric(float64(peerNone)/float64(nomatch), "no-match-x")
}
