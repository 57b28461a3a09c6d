package engine

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestUnreadableAnswerFailsItsCall: the answers are read from the tape in
// the background while the agent starts, not before. A tape whose second
// answer's body is not on it still opens and serves its first call as
// recorded; the second call gets an error naming the frame (never the
// recorded status with an empty body), and the replay's verdict carries it.
func TestUnreadableAnswerFailsItsCall(t *testing.T) {
	t.Parallel()
	reqs := []string{`{"model":"m","messages":[{"role":"user","content":"one"}]}`, `{"model":"m","messages":[{"role":"user","content":"two"}]}`}
	path, seqs := callsTape(t, reqs, [][]byte{[]byte(`{"answer":"one"}`), nil})
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	m, err := NewMatcher(tp, nil)
	if err != nil {
		t.Fatalf("a tape with an answer not on it does not open for replay: %v", err)
	}
	tb := &tapeBackend{m: m, tape: tp, onDiv: func(d *Divergence) { t.Errorf("diverged: %v", d) }}
	tb.forkCall = -1
	p := &proxy{backend: tb}
	p.control = newControl(p)
	for i, r := range reqs {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/openai/v1/chat/completions", strings.NewReader(r)))
		body := rec.Body.String()
		switch {
		case i == 0 && (rec.Code != 200 || body != `{"answer":"one"}`):
			t.Errorf("first call: %d %q, want the recorded answer", rec.Code, body)
		case i == 1 && (rec.Code != http.StatusBadGateway || !strings.Contains(body, "does not read") || !strings.Contains(body, fmt.Sprintf("frame %d", seqs[1]))):
			t.Errorf("second call: %d %q, want a 502 naming frame %d", rec.Code, body, seqs[1])
		}
	}
	s := &session{proxy: p}
	if err := s.replayed(&Result{}, tb); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "response body of frame") {
		t.Errorf("the replay's verdict: %v, want the unreadable answer named with the tape", err)
	}
}
