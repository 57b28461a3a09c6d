package engine

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestMatcherReadsAheadWithinItsWindow: the request bodies a replay reads
// ahead of its agent are bounded. A long run's requests, each resending
// the conversation, are many times its tape's size (a 6 MB tape of 800
// steps held 200 MB of them while its agent ran, 1.4 GB once its output
// was compared); each is let go once its call is used, and the reading
// goes on to the end.
func TestMatcherReadsAheadWithinItsWindow(t *testing.T) {
	t.Parallel()
	const n, size, window = 12, 64 << 10, 200 << 10
	var bodies []string
	answers := make([][]byte, n)
	for i := range n {
		bodies = append(bodies, fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"%d %s"}]}`, i, strings.Repeat(string(rune('a'+i)), size)))
		answers[i] = fmt.Appendf(nil, `{"id":"answer-%d"}`, i)
	}
	m := windowMatcher(t, bodies, answers, window)
	held := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.held
	}
	for deadline := time.Now().Add(10 * time.Second); held() < window; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the matcher read %d bytes ahead, never the %d of its window", held(), window)
		}
	}
	time.Sleep(20 * time.Millisecond) // time to read on, were it not bounded
	if h := held(); h > window+len(bodies[0]) {
		t.Fatalf("%d bytes of request bodies held, over the window of %d and one body", h, window)
	}
	for i, b := range bodies {
		if c, d := m.Match(windowRequest(b)); d != nil || c.Request.Call != uint64(i) {
			t.Fatalf("request %d: %s, divergence %v", i, callAt(c), d)
		}
	}
	select {
	case <-m.bodiesRead:
	case <-time.After(10 * time.Second):
		t.Fatal("the reading ahead did not go on as the calls were used")
	}
	if h := held(); h != 0 {
		t.Errorf("%d bytes of request bodies held after every call was used", h)
	}
}

// TestMatcherStopEndsReadingAhead: a replay whose agent asked nothing
// ends its reader, waiting with its window full, when it ends.
func TestMatcherStopEndsReadingAhead(t *testing.T) {
	t.Parallel()
	bodies := []string{`{"a":"` + strings.Repeat("x", 4096) + `"}`, `{"b":"` + strings.Repeat("y", 4096) + `"}`, `{"c":1}`}
	m := windowMatcher(t, bodies, [][]byte{[]byte(`{}`), []byte(`{}`), []byte(`{}`)}, 1024)
	m.stop()
	select {
	case <-m.bodiesRead:
	case <-time.After(10 * time.Second):
		t.Fatal("the reader waits on after the replay stopped it")
	}
}

// TestAnswerGroupsAreOfAnswersGiven: the answers of identical requests are
// taken as swappable among those this replay gave: one it did not give is
// a difference of its output, not a swap.
func TestAnswerGroupsAreOfAnswersGiven(t *testing.T) {
	t.Parallel()
	same := `{"model":"m","messages":[{"role":"user","content":"the same question"}]}`
	answer := func(text string) []byte {
		return fmt.Appendf(nil, `{"id":"chatcmpl-%s","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}]}`, strings.ReplaceAll(text, " ", ""), text)
	}
	m := windowMatcher(t, []string{same, same, `{"model":"m","messages":[{"role":"user","content":"another"}]}`},
		[][]byte{answer("the first answer"), answer("the second answer"), answer("the third answer")}, bodyWindow)
	if c, d := m.Match(windowRequest(same)); d != nil || c.Request.Call != 0 {
		t.Fatalf("first request: %s, %v", callAt(c), d)
	}
	if g := m.answerGroups(); len(g) != 0 {
		t.Errorf("groups of answers with one this replay did not give: %q", g)
	}
	if c, d := m.Match(windowRequest(same)); d != nil || c.Request.Call != 1 {
		t.Fatalf("second request: %s, %v", callAt(c), d)
	}
	g := m.answerGroups()
	if len(g) != 1 || !slices.Contains(g[0], "the first answer") || !slices.Contains(g[0], "the second answer") {
		t.Errorf("groups once both answers were given: %q; want one of both", g)
	}
}

func windowMatcher(t *testing.T, bodies []string, answers [][]byte, window int) *Matcher {
	t.Helper()
	path, _ := callsTape(t, bodies, answers)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMatcher(tp, nil, window)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stop()
		<-m.bodiesRead
		tp.Close()
	})
	return m
}

func windowRequest(body string) MatchRequest {
	return MatchRequest{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}
