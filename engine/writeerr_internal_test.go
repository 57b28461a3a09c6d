package engine

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// failAfter is a tape destination that takes n writes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(b), nil
}

// TestRecordResponseWriteErrorReachesTheRun: a response frame the tape
// refuses is no longer dropped: the proxy keeps it, naming the frame and
// the reason, for the run's result.
func TestRecordResponseWriteErrorReachesTheRun(t *testing.T) {
	w, err := tapefmt.NewWriter(&failAfter{n: 1 << 30}, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{tape: w}
	r, _ := http.NewRequest("POST", "http://x/v1/chat/completions", nil)
	x := &exchange{provider: providers[0], path: "/v1/chat/completions", req: r, body: []byte(`{"model":"m"}`), call: 7}
	if err := p.recordRequest(x); err != nil {
		t.Fatal(err)
	}
	if err := p.writeError(); err != nil {
		t.Fatalf("a clean write left %v", err)
	}
	w.Close() // every later write fails
	p.recordResponse(x, answer{resp: tapefmt.LLMResponse{Status: 200}})
	err = p.writeError()
	if err == nil || !strings.Contains(err.Error(), "llm.response of call 7") {
		t.Fatalf("writeError = %v, want the failed llm.response of call 7 named", err)
	}
	s := &session{tape: w, path: "run.jbx", proxy: p}
	s.appendFrame(tapefmt.TxCommit{Tx: "tx-1"}) // the first failure is the one kept
	var te *TapeError
	if err := s.finish(tapefmt.RunEnd{}, &Result{}); !errors.As(err, &te) || !strings.Contains(err.Error(), "llm.response of call 7: ") {
		t.Fatalf("finish = %v, want a *TapeError naming the llm.response of call 7 and why", err)
	}
}

// TestBoothFrameWriteErrorReachesTheRun: the booth's and the SDK's frames
// (a transaction's begin, commit, rollback, its file changes) that the
// tape refuses are kept for the run's result as the proxy's are, named by
// kind: never dropped without a word.
func TestBoothFrameWriteErrorReachesTheRun(t *testing.T) {
	w, err := tapefmt.NewWriter(&failAfter{n: 1 << 30}, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{tape: w, path: "run.jbx", proxy: &proxy{tape: w}}
	s.appendFrame(tapefmt.TxBegin{Tx: "tx-1"})
	if err := s.proxy.writeError(); err != nil {
		t.Fatalf("a clean write left %v", err)
	}
	w.Close()
	s.appendFrame(tapefmt.TxCommit{Tx: "tx-1", Changes: 3})
	var te *TapeError
	if err := s.finish(tapefmt.RunEnd{}, &Result{}); !errors.As(err, &te) || !strings.Contains(err.Error(), "writing tx.commit: ") {
		t.Fatalf("finish = %v, want a *TapeError naming the tx.commit frame and why", err)
	}
}
