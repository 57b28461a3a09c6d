package timeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// held is the bytes that texts keep alive: the longest view of each
// buffer they are strings over.
func held(texts []string) int {
	longest := map[*byte]int{}
	for _, s := range texts {
		p := unsafe.StringData(s)
		longest[p] = max(longest[p], len(s))
	}
	n := 0
	for _, l := range longest {
		n += l
	}
	return n
}

// TestForDiffRequestsShareTheConversation: each request of a run resends
// the conversation, so a long run's request texts, held apart, took memory
// in the square of its steps (590 MB for `jukebox diff` of an 800-step run
// against a 400-step one). Each text is still the request's whole text;
// together they keep about what the longest of them takes, not their sum.
func TestForDiffRequestsShareTheConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 60, Chunks: 8, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	tl, err := ForDiff(tp, "run")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	sum, longest := 0, 0
	for _, fr := range tl.Frames {
		if fr.Kind != tapefmt.KindLLMRequest.String() {
			continue
		}
		f, err := tp.Frame(fr.Seq)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		body, err := tp.Blob(p.(*tapefmt.LLMRequest).Body)
		if err != nil {
			t.Fatal(err)
		}
		if want := shown(llmwire.RequestText(body)); fr.Body != want {
			t.Fatalf("frame %d: the text is not the request's:\n%.300s\nwant\n%.300s", fr.Seq, fr.Body, want)
		}
		texts = append(texts, fr.Body)
		sum, longest = sum+len(fr.Body), max(longest, len(fr.Body))
	}
	if len(texts) != 60 {
		t.Fatalf("%d request frames, want 60", len(texts))
	}
	if got := held(texts); got > 3*longest {
		t.Fatalf("the request texts keep %d bytes (their sum %d), want at most 3x the longest (%d)", got, sum, longest)
	}
}

// TestConversationsTakeTurns: agents that take turns each extend their own
// conversation; a text that extends none, or that goes back on one (an
// agent that trimmed its history), is a new conversation; every text comes
// back as it went in.
func TestConversationsTakeTurns(t *testing.T) {
	var cs conversations
	var a, b, c strings.Builder
	var texts []string
	for i := range 40 {
		fmt.Fprintf(&a, "user: step %d of the planner\n", i)
		fmt.Fprintf(&b, "user: step %d of the coder\n", i)
		for _, want := range []string{a.String(), b.String()} {
			want = strings.Clone(want)
			got := cs.share(want)
			if got != want {
				t.Fatalf("share gave %q, want %q", got, want)
			}
			texts = append(texts, got)
		}
	}
	if got, longest := held(texts), len(a.String())+len(b.String()); got > 4*longest {
		t.Fatalf("two conversations of 40 turns keep %d bytes, want at most %d", got, 4*longest)
	}
	// Trimmed: the planner's history without its first turn.
	c.WriteString(a.String()[len("user: step 0 of the planner\n"):])
	if got := cs.share(c.String()); got != c.String() {
		t.Fatalf("a trimmed history came back as %q", got)
	}
	if got := cs.share(""); got != "" {
		t.Fatalf(`share("") = %q`, got)
	}
	// More conversations than are kept: the oldest are let go.
	for i := range 2 * recentConversations {
		s := fmt.Sprintf("system: helper %d\n", i)
		if got := cs.share(s); got != s {
			t.Fatalf("share gave %q, want %q", got, s)
		}
	}
	if len(cs.recent) != recentConversations {
		t.Fatalf("%d conversations kept, want %d", len(cs.recent), recentConversations)
	}
}
