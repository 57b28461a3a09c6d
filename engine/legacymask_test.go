package engine

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// legacyTape writes a tape as an earlier release did: the body as given
// (no credential rules in bodies; masks, if any, already in it), the
// patterns in run.start.
func legacyTape(t *testing.T, redactPatterns []string, body string) *tapefmt.Tape {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord, Redact: redactPatterns})
		h, _ := w.PutBlob("req", []byte(body))
		w.Append(0, tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: h, Size: int64(len(body)),
			Header: http.Header{"Content-Type": {"application/json"}}})
		out, _ := w.PutBlob("resp", []byte(`{"id":"chat-1"}`))
		w.Append(0, tapefmt.LLMResponse{Status: 200, Body: out, Size: 15, Header: http.Header{"Content-Type": {"application/json"}}})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

// TestEarlierTapesStillMatch: tapes an earlier release wrote keep their
// bodies as that release did, so the live request is matched that way
// too: a prompt holding a token of a known format (kept as sent, before
// the credential rules reached bodies), and a --redact tape whose masks
// kept the secret's length ('*' for letters and digits).
func TestEarlierTapesStillMatch(t *testing.T) {
	for name, c := range map[string]struct {
		patterns       []string
		recorded, live string
	}{
		"token in a prompt": {nil, `{"model":"m","messages":[{"role":"user","content":"my key is sk-proj-abcdefghijklmnopqrstuvwx"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"my key is sk-proj-abcdefghijklmnopqrstuvwx"}]}`},
		"length-keeping mask": {[]string{`PIN-[0-9]+`}, `{"model":"m","messages":[{"role":"user","content":"use ***-****"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"use PIN-4711"}]}`},
	} {
		m, err := NewMatcher(legacyTape(t, c.patterns, c.recorded), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := MatchRequest{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(c.live)}
		if _, d := m.Match(r); d != nil {
			t.Errorf("%s: the earlier tape does not replay: %v", name, d)
		}
	}
}
