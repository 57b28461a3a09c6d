package engine_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// compatTapes are the tapes written by earlier releases (testdata/compat),
// with the model calls each holds.
var compatTapes = map[string]int{
	"agent-run-v1.jbx":    5, // the sample agent run, streamed, with tool calls and file changes
	"sealed-v1.jbx":       5, // the same, sealed with testdata/tapes/seal.key
	"short-chat-v1.jbx":   5, // short non-streamed chat calls whose blobs the fixed reader must still read
	"short-stream-v1.jbx": 3, // short streamed chat calls
	"sdk-writes-v1.jbx":   0, // Python SDK transactions whose staged writes went as JSON batches (cmd/jukebox replays it)
	"sdk-turns-v1.jbx":    0, // Python SDK turns whose transactions began without a name (cmd/jukebox replays it)
}

// TestCompatTapesOpenVerifyReplay: every tape in testdata/compat opens,
// verifies in full (sealed-v1.jbx with its key too), and replays: each
// recorded request, served to the replayer in process, gets the recorded
// status and response body byte for byte.
func TestCompatTapesOpenVerifyReplay(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "compat", "*.jbx"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(compatTapes) {
		t.Fatalf("testdata/compat holds %d tapes, want %d: list a new one in compatTapes", len(paths), len(compatTapes))
	}
	key, err := os.ReadFile(filepath.Join("..", "testdata", "tapes", "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	key = bytes.TrimSpace(key)
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			calls, ok := compatTapes[name]
			if !ok {
				t.Fatalf("%s is not listed in compatTapes", name)
			}
			rep := tapetest.Verify(t, path)
			tp, err := tapefmt.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Close()
			if rep.Sealed != (name == "sealed-v1.jbx") {
				t.Fatalf("sealed = %v", rep.Sealed)
			}
			if rep.Sealed {
				if srep, err := tp.Verify(tapefmt.VerifyOptions{Blobs: true, Key: key}); err != nil || !srep.SealOK {
					t.Fatalf("the seal does not check with testdata/tapes/seal.key: %v", err)
				}
			}
			if n := replayEveryCall(t, tp); n != calls {
				t.Fatalf("replayed %d calls, want %d", n, calls)
			}
		})
	}
}

// replayEveryCall serves each recorded request of tp, in order, to a
// replay handler over tp, and fails unless the answer is the recorded
// response; it returns the number of calls.
func replayEveryCall(t *testing.T, tp *tapefmt.Tape) int {
	t.Helper()
	h, err := engine.NewReplayHandler(tp, reqmatch.Default(), 0)
	if err != nil {
		t.Fatal(err)
	}
	reqs := map[uint64]*tapefmt.LLMRequest{}
	var order []uint64
	resps := map[uint64]*tapefmt.LLMResponse{}
	for f, err := range tp.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			reqs[p.Call], order = p, append(order, p.Call)
		case *tapefmt.LLMResponse:
			resps[p.Call] = p
		}
	}
	for _, call := range order {
		req, resp := reqs[call], resps[call]
		if resp == nil {
			t.Fatalf("call %d has no response on the tape", call)
		}
		body, want := blob(t, tp, req.Body), blob(t, tp, resp.Body)
		url := "/" + req.Provider + req.Path
		if req.Query != "" {
			url += "?" + req.Query
		}
		r := httptest.NewRequest(req.Method, url, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != resp.Status || !bytes.Equal(w.Body.Bytes(), want) {
			t.Fatalf("call %d (%s %s, %d bytes): replay answered %d with %d bytes\n%q\nrecorded %d with %d bytes\n%q",
				call, req.Method, req.Path, len(body), w.Code, w.Body.Len(), w.Body.Bytes(), resp.Status, len(want), want)
		}
	}
	return len(order)
}

func blob(t *testing.T, tp *tapefmt.Tape, h tapefmt.Hash) []byte {
	t.Helper()
	if h.IsZero() {
		return nil
	}
	b, err := tp.Blob(h)
	if err != nil {
		t.Fatalf("blob %s: %v", h.Short(), err)
	}
	return b
}

// TestSampleTapesReplay: the sample tapes in testdata/tapes, written by
// earlier releases, replay call by call as they did, now that queries,
// origins and plain HTTP take part in matching.
func TestSampleTapesReplay(t *testing.T) {
	for _, name := range []string{"agent-run.jbx", "sealed.jbx"} {
		tp, err := tapefmt.Open(filepath.Join("..", "testdata", "tapes", name))
		if err != nil {
			t.Fatal(err)
		}
		if n := replayEveryCall(t, tp); n != 5 {
			t.Errorf("%s: replayed %d calls, want 5", name, n)
		}
		tp.Close()
	}
}
