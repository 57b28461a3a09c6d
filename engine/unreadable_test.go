package engine

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	path := filepath.Join(t.TempDir(), "run.jbx")
	reqs := []string{`{"model":"m","messages":[{"role":"user","content":"one"}]}`, `{"model":"m","messages":[{"role":"user","content":"two"}]}`}
	var missingAt uint64
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord})
		json := http.Header{"Content-Type": {"application/json"}}
		for i, r := range reqs {
			req, err := w.PutBlob("req", []byte(r))
			if err != nil {
				return err
			}
			resp := tapefmt.HashOf([]byte(`{"never":"stored"}`))
			if i == 0 {
				if resp, err = w.PutBlob("resp", []byte(`{"answer":"one"}`)); err != nil {
					return err
				}
			}
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
				Header: json, Body: req, Size: int64(len(r)), Model: "m"})
			seq, err := w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: resp, Header: json})
			if err != nil {
				return err
			}
			missingAt = seq
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
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
		case i == 1 && (rec.Code != http.StatusBadGateway || !strings.Contains(body, "does not read") || !strings.Contains(body, fmt.Sprintf("frame %d", missingAt))):
			t.Errorf("second call: %d %q, want a 502 naming frame %d", rec.Code, body, missingAt)
		}
	}
	s := &session{proxy: p}
	res := &Result{}
	if err := s.replayed(res, tb); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "response body of frame") {
		t.Errorf("the replay's verdict: %v, want the unreadable answer named with the tape", err)
	}
}
