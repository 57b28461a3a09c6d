package engine

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestUnreadableControlFrameFailsTheReplay: a tape whose recorded
// control-API exchange does not read (a flipped byte in a transaction's
// staged write, tried as a user) answered the agent's request with the
// error, and the replay's verdict said nothing of the tape: the agent's
// exit status, exit 1, no word of the damage. The verdict carries it
// now, naming the tape, as it does an answer of a model call.
func TestUnreadableControlFrameFailsTheReplay(t *testing.T) {
	t.Parallel()
	missing := tapefmt.HashOf([]byte(`{"ok":true}`)) // an answer whose blob is not on the tape
	path := filepath.Join(t.TempDir(), "ctl.jbx")
	tapetest.WritePayloads(t, path, &tapefmt.RunStart{Argv: []string{"agent"}},
		&tapefmt.Control{Method: "POST", Path: "/v1/marker", Status: 200, Request: []byte(`{"label":"x"}`), AnswerBody: missing},
		&tapefmt.RunEnd{})
	tp := tapetest.Open(t, path)
	m, err := NewMatcher(tp, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := &tapeBackend{m: m, tape: tp, onDiv: func(d *Divergence) { t.Errorf("diverged: %v", d) }}
	tb.forkCall = -1
	p := &proxy{backend: tb}
	p.control = newControl(p)
	s := &session{proxy: p}
	if err := s.replayed(&Result{}, tb); err != nil {
		t.Fatalf("a replay that asked for nothing: %v", err)
	}
	req := httptest.NewRequest(http.MethodPost, controlapi.Prefix+"/v1/marker", strings.NewReader(`{"label":"x"}`))
	req.Header.Set("Authorization", "Bearer "+p.control.token)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("the marker: %d %s, want the tape's error", rec.Code, rec.Body)
	}
	if err := s.replayed(&Result{}, tb); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "control-API exchanges do not read") {
		t.Errorf("the replay's verdict: %v, want the unreadable exchange named with the tape", err)
	}
}
