package diffview

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// dpLCS is the textbook O(n·m) LCS length, the reference for lcs.
func dpLCS(a, b []int32) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func randSeq(r *rand.Rand, n, alphabet int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(r.IntN(alphabet))
	}
	return s
}

// checkMatches verifies that the matches are increasing and equal, and
// returns how many there are.
func checkMatches(t *testing.T, a, b []int32, limit int) int {
	t.Helper()
	pi, pj, n := -1, -1, 0
	lcs(a, b, limit, func(i, j int) {
		if i <= pi || j <= pj || a[i] != b[j] {
			t.Fatalf("bad match (%d,%d) after (%d,%d) in %v / %v", i, j, pi, pj, a, b)
		}
		pi, pj, n = i, j, n+1
	})
	return n
}

func TestLCSIsLongest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		a := randSeq(r, r.IntN(40), 1+r.IntN(5))
		b := randSeq(r, r.IntN(40), 1+r.IntN(5))
		if got, want := checkMatches(t, a, b, effortLimit), dpLCS(a, b); got != want {
			t.Fatalf("lcs %v / %v: %d matches, want %d", a, b, got, want)
		}
	}
}

func TestLCSEffortLimitStaysValid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a := randSeq(r, r.IntN(80), 1+r.IntN(8))
		b := randSeq(r, r.IntN(80), 1+r.IntN(8))
		limit := 1 + r.IntN(4)
		if got, best := checkMatches(t, a, b, limit), dpLCS(a, b); got > best {
			t.Fatalf("more matches (%d) than the LCS (%d)", got, best)
		}
	}
}

// agentRun builds a timeline shaped like a recorded agent: per step a
// request, a response, a tool call, a file change and a tool result.
func agentRun(name string, steps int) Timeline {
	tl := Timeline{Name: name, Steps: steps}
	for i := range steps {
		tl.Frames = append(tl.Frames,
			Frame{Kind: "llm.request", Signature: "llm.request POST /v1/chat/completions",
				Title: "POST /v1/chat/completions gpt-4o-mini", Body: fmt.Sprintf("model: gpt-4o-mini\nuser: step %d please", i)},
			Frame{Kind: "llm.response", Signature: "llm.response /v1/chat/completions",
				Title: "200", Body: fmt.Sprintf("I will write file %d now", i), Tokens: 100, Cost: 0.001},
			Frame{Kind: "tool.call", Signature: "tool.call write_file", Title: "write_file",
				Body: fmt.Sprintf(`{"path": "src/f%d.py", "content": "x = %d"}`, i, i)},
			Frame{Kind: "file.change", Signature: fmt.Sprintf("file.change src/f%d.py", i), Title: "write",
				Body: fmt.Sprintf("x = %d", i)},
			Frame{Kind: "tool.result", Signature: "tool.result write_file", Title: "ok", Body: `"wrote 5 bytes"`})
	}
	renumber(&tl)
	return tl
}

func renumber(tl *Timeline) {
	for i := range tl.Frames {
		tl.Frames[i].Seq = i + 10
	}
}

func edit(tl Timeline, fn func(fs []Frame) []Frame) Timeline {
	out := tl
	out.Frames = fn(slices.Clone(tl.Frames))
	renumber(&out)
	return out
}

func TestFirstDivergenceCatalogue(t *testing.T) {
	base := agentRun("a", 6)
	cases := []struct {
		name        string
		tl          Timeline
		op          Op
		left, right int // frame numbers (Seq) named, -1 for none
	}{
		{"identical", base, Same, -1, -1},
		{"insertion", edit(base, func(fs []Frame) []Frame {
			extra := Frame{Kind: "tool.call", Signature: "tool.call read_file", Title: "read_file", Body: `{"path": "README"}`}
			return slices.Insert(fs, 13, extra)
		}), OnlyRight, -1, 23},
		{"deletion", edit(base, func(fs []Frame) []Frame { return slices.Delete(fs, 18, 19) }), OnlyLeft, 28, -1},
		{"deleted step", edit(base, func(fs []Frame) []Frame { return slices.Delete(fs, 10, 15) }), OnlyLeft, 20, -1},
		{"changed tool argument", edit(base, func(fs []Frame) []Frame {
			fs[17].Body = strings.Replace(fs[17].Body, "x = 3", "x = 33", 1)
			return fs
		}), Changed, 27, 27},
		{"changed model", edit(base, func(fs []Frame) []Frame {
			for i := 5; i < len(fs); i += 5 {
				fs[i].Title = strings.Replace(fs[i].Title, "gpt-4o-mini", "gpt-4o", 1)
				fs[i].Body = strings.Replace(fs[i].Body, "gpt-4o-mini", "gpt-4o", 1)
			}
			return fs
		}), Changed, 15, 15},
		{"changed response text", edit(base, func(fs []Frame) []Frame {
			fs[21].Body = "I will read the file first"
			return fs
		}), Changed, 31, 31},
		{"truncated run", edit(base, func(fs []Frame) []Frame { return fs[:22] }), OnlyLeft, 32, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Compare(base, c.tl)
			d, ok := r.Divergence()
			if c.op == Same {
				if ok || !r.equal() {
					t.Fatalf("identical timelines diverge: %+v", d)
				}
				return
			}
			if !ok || d.Op != c.op || d.Left != c.left || d.Right != c.right {
				t.Fatalf("divergence %+v, want %s left %d right %d", d, c.op, c.left, c.right)
			}
			if d.Text == "" {
				t.Fatal("no text")
			}
		})
	}
}

func TestAlignKeepsEveryFrameOnce(t *testing.T) {
	a := agentRun("a", 8)
	b := edit(a, func(fs []Frame) []Frame {
		fs = slices.Delete(fs, 3, 9)
		fs[20].Body = "changed"
		return slices.Insert(fs, 30, Frame{Kind: "marker", Signature: "marker"})
	})
	checkAlignment(t, a, b)
	r := rand.New(rand.NewPCG(5, 6))
	randTL := func() Timeline {
		var tl Timeline
		for range r.IntN(60) {
			tl.Frames = append(tl.Frames, Frame{Signature: fmt.Sprint(r.IntN(4)), Body: fmt.Sprint(r.IntN(3))})
		}
		return tl
	}
	for range 2000 {
		checkAlignment(t, randTL(), randTL())
	}
}

// checkAlignment verifies that align keeps every frame once, in order, pairs
// only equal signatures and calls Same only what is equal.
func checkAlignment(t *testing.T, a, b Timeline) {
	t.Helper()
	nl, nr := 0, 0
	for _, p := range align(a, b) {
		if p.Left >= 0 {
			if p.Left != nl {
				t.Fatalf("left %d out of order, want %d", p.Left, nl)
			}
			nl++
		}
		if p.Right >= 0 {
			if p.Right != nr {
				t.Fatalf("right %d out of order, want %d", p.Right, nr)
			}
			nr++
		}
		if (p.Op == Same || p.Op == Changed) != (p.Left >= 0 && p.Right >= 0) {
			t.Fatalf("pair %+v has the wrong sides for its op", p)
		}
		if p.Left >= 0 && p.Right >= 0 {
			l, r := a.Frames[p.Left], b.Frames[p.Right]
			if l.Signature != r.Signature || (p.Op == Same) != (l.Body == r.Body && l.Title == r.Title) {
				t.Fatalf("pair %+v joins %+v and %+v", p, l, r)
			}
		}
	}
	if nl != len(a.Frames) || nr != len(b.Frames) {
		t.Fatalf("aligned %d+%d frames of %d+%d", nl, nr, len(a.Frames), len(b.Frames))
	}
}

func TestChangedPairGetsWordDiff(t *testing.T) {
	a := agentRun("a", 2)
	b := edit(a, func(fs []Frame) []Frame {
		fs[0].Title = "POST /v1/chat/completions gpt-4o"
		return fs
	})
	r := Compare(a, b)
	p := r.Pairs[r.First]
	if p.Op != Changed || len(p.Body) != 0 {
		t.Fatalf("pair %+v", p)
	}
	want := []Span{{Equal, "POST /v1/chat/completions "}, {Delete, "gpt-4o-mini"}, {Insert, "gpt-4o"}}
	if !slices.Equal(p.Title, want) {
		t.Fatalf("title diff %q, want %q", p.Title, want)
	}
}

func TestWordDiff(t *testing.T) {
	cases := []struct{ a, b string }{
		{"", ""}, {"a", ""}, {"", "b"}, {"the quick brown fox", "the quick red fox"},
		{"line one\nline two\n", "line one\nline 2\nline three\n"},
		{"héllo wörld — ok", "héllo welt — ok"}, {`{"a": 1}`, `{"a": 2}`},
	}
	for _, c := range cases {
		spans := wordDiff(c.a, c.b)
		var l, r strings.Builder
		for _, s := range spans {
			if s.Op != Insert {
				l.WriteString(s.Text)
			}
			if s.Op != Delete {
				r.WriteString(s.Text)
			}
			if s.Text == "" {
				t.Fatalf("%q→%q: empty span", c.a, c.b)
			}
		}
		if l.String() != c.a || r.String() != c.b {
			t.Fatalf("%q→%q: spans %q rebuild %q→%q", c.a, c.b, spans, l.String(), r.String())
		}
	}
	got := wordDiff("the quick brown fox", "the quick red fox")
	want := []Span{{Equal, "the quick "}, {Delete, "brown"}, {Insert, "red"}, {Equal, " fox"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTotals(t *testing.T) {
	a := agentRun("a", 3)
	b := agentRun("b", 4)
	r := Compare(a, b)
	if r.LeftTotals.Calls != 3 || r.RightTotals.Calls != 4 || r.Delta.Calls != 1 || r.Delta.Tokens != 100 ||
		r.Delta.Frames != 5 || r.Delta.Steps != 1 {
		t.Fatalf("totals %+v %+v delta %+v", r.LeftTotals, r.RightTotals, r.Delta)
	}
}

func FuzzWordDiff(f *testing.F) {
	f.Add("the quick brown fox", "the quick red fox")
	f.Add("model: gpt-4o-mini\nuser: hi", "model: gpt-4o\nuser: hi\n")
	f.Add("", "\x00\xff")
	f.Fuzz(func(t *testing.T, a, b string) {
		var l, r strings.Builder
		for _, s := range wordDiff(a, b) {
			if s.Op != Insert {
				l.WriteString(s.Text)
			}
			if s.Op != Delete {
				r.WriteString(s.Text)
			}
		}
		if l.String() != a || r.String() != b {
			t.Fatalf("%q→%q rebuilds as %q→%q", a, b, l.String(), r.String())
		}
	})
}
