package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestMatchReadsRecordedBodiesOnNeed: the matcher does not read the
// recorded request bodies before the agent starts. A body sent as
// recorded matches by its address, even when the recorded copy is damaged
// (what replay serves, the answer, is read and checked when served); one that must be
// compared by its canonical form reads the recorded copy, and a damaged
// one is named on the recorded side of the divergence.
func TestMatchReadsRecordedBodiesOnNeed(t *testing.T) {
	bodies := []string{
		`{"model":"m","messages":[{"role":"user","content":"b1c3e8f4a2d6079e5f31c4b7a9e2d8f0c6b5a4e3d2f1"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c"}]}`,
	}
	path, _ := callsTape(t, bodies, [][]byte{[]byte(`{"id":"answer-a"}`), []byte(`{"id":"answer-b"}`)})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, []byte("b1c3e8f4"))
	if i < 0 || bytes.Count(raw, []byte("b1c3e8f4")) != 1 {
		t.Fatal("the first request body is not stored raw once: the test cannot damage it")
	}
	raw[i] = 'X'
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	m, err := NewMatcher(tp, nil)
	if err != nil {
		t.Fatalf("the matcher read the request bodies before the agent starts: %v", err)
	}
	<-m.bodiesRead
	req := func(body string) MatchRequest {
		return MatchRequest{Method: "POST", Path: "/v1/chat/completions", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	// The second body re-spaced: compared by canonical form, read intact.
	if c, d := m.Match(req(strings.Replace(bodies[1], `,"messages"`, `, "messages"`, 1))); d != nil || c.Seq != 3 {
		t.Fatalf("re-spaced second body: %s, divergence %v; want the call at frame 3", callAt(c), d)
	}
	// The first body re-spaced: its recorded copy is needed, and damaged.
	_, d := m.Match(req(strings.Replace(bodies[0], `,"messages"`, `, "messages"`, 1)))
	if d == nil || d.Frame != 1 || !strings.Contains(d.Expected, "unreadable") || !strings.Contains(d.Expected, "frame 1") {
		t.Fatalf("re-spaced first body over a damaged copy: divergence %+v; want one at frame 1 naming the unreadable body", d)
	}
	// Sent as recorded: matched by its address, the damaged copy unread.
	if c, d := m.Match(req(bodies[0])); d != nil || c.Seq != 1 {
		t.Fatalf("first body as recorded: %s, divergence %v; want the call at frame 1", callAt(c), d)
	}
}

// callsTape writes a tape of one run of JSON calls to the OpenAI chat
// endpoint: each request body answered by its answer, or (nil) by the
// address of a body the tape does not hold. It returns the path and each
// answer's frame.
func callsTape(t *testing.T, requests []string, answers [][]byte) (string, []uint64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.jbx")
	var seqs []uint64
	json := http.Header{"Content-Type": {"application/json"}}
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		if _, err := w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord}); err != nil {
			return err
		}
		for i, b := range requests {
			req := tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
				Header: json, Size: int64(len(b)), Model: "m"}
			var err error
			if req.Body, err = w.PutBlob("req", []byte(b)); err != nil {
				return err
			}
			if _, err := w.Append(0, req); err != nil {
				return err
			}
			h := tapefmt.HashOf([]byte("a body this tape does not hold"))
			if answers[i] != nil {
				if h, err = w.PutBlob("resp", answers[i]); err != nil {
					return err
				}
			}
			seq, err := w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: h, Header: json})
			if err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, seqs
}

func callAt(c *Call) string {
	if c == nil {
		return "no call"
	}
	return fmt.Sprintf("the call at frame %d", c.Seq)
}
