package engine

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// sseUpstream answers every call with a stream of n events, flushed one
// by one.
func sseUpstream(t *testing.T, n int) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"w%d \"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	return up
}

// overlapProxy is a recording proxy to up writing to w, its events to
// onEvent (may be nil).
func overlapProxy(t *testing.T, up string, w *tapefmt.Writer, onEvent func(Event)) *proxy {
	t.Helper()
	p, err := newProxy(newLive(map[string]string{"openai": up}, RunOptions{}), w, onEvent)
	if err != nil {
		t.Fatal(err)
	}
	if !p.overlaps() {
		t.Fatal("a live proxy with a tape and no breaker does not overlap its request frames")
	}
	p.serve()
	t.Cleanup(func() { p.Close() })
	return p
}

func postChat(t *testing.T, p *proxy, i int) string {
	t.Helper()
	body := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"call %d"}]}`, i)
	resp, err := http.Post(p.baseURL(providers[0])+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// TestOverlappedCallsStayInOrder: with the request frame written while
// the call goes upstream, each call's llm.request still comes before its
// llm.response on the tape, and whoever hears the run's events hears a
// call's request before its chunks and its response.
func TestOverlappedCallsStayInOrder(t *testing.T) {
	var buf bytes.Buffer
	w, err := tapefmt.NewWriter(&buf, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []Event
	p := overlapProxy(t, sseUpstream(t, 40).URL+"/v1", w, func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	for i := range 20 {
		if got := postChat(t, p, i); !strings.HasSuffix(got, "data: [DONE]\n\n") || strings.Count(got, "data: ") != 41 {
			t.Fatalf("call %d: the agent got %q", i, got)
		}
	}
	if err := p.writeError(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tape, err := tapefmt.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	next := uint64(0) // the call whose request comes next
	asked := false
	for f, err := range tape.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		pl, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch v := pl.(type) {
		case *tapefmt.LLMRequest:
			if asked || v.Call != next {
				t.Fatalf("frame %d: llm.request of call %d, want call %d's after call %d's answer", f.Seq, v.Call, next, next-1)
			}
			asked = true
		case *tapefmt.LLMResponse:
			if !asked || v.Call != next {
				t.Fatalf("frame %d: llm.response of call %d before its request", f.Seq, v.Call)
			}
			asked = false
			next++
		}
	}
	if next != 20 {
		t.Fatalf("%d calls on the tape, want 20", next)
	}
	mu.Lock()
	defer mu.Unlock()
	state := map[uint64]EventKind{}
	for _, e := range events {
		switch e.Kind {
		case EventRequest:
			if state[e.Call] != 0 {
				t.Fatalf("call %d: a second request event", e.Call)
			}
		case EventChunk, EventResponse:
			if state[e.Call] == 0 || state[e.Call] == EventResponse {
				t.Fatalf("call %d: event %v heard before its request (or after its response)", e.Call, e.Kind)
			}
		}
		state[e.Call] = e.Kind
	}
	for c := range uint64(20) {
		if state[c] != EventResponse {
			t.Fatalf("call %d: last event %v, want its response", c, state[c])
		}
	}
}

// TestOverlappedRequestWriteErrorReachesTheRun: a request frame the tape
// refuses while the call is already upstream is not dropped: the agent
// gets its answer (the call was made) and the run fails naming the frame.
// Every later call is refused unsent, whichever frame failed first (a
// trial saw calls go out unrecorded after the agent's output had filled
// the disk).
func TestOverlappedRequestWriteErrorReachesTheRun(t *testing.T) {
	var dst switchable
	w, err := tapefmt.NewWriter(&dst, tapefmt.Options{Sync: tapefmt.SyncNever, Filter: failingFrom{&dst}})
	if err != nil {
		t.Fatal(err)
	}
	upstream, asked := countedUpstream(t)
	p := overlapProxy(t, upstream, w, nil)
	// A body whose blob is past the tape's write buffer, compressed or
	// not: its write fails at once.
	big := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"%x"}]}`, noise())
	resp, err := http.Post(p.baseURL(providers[0])+"/chat/completions", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
		t.Fatalf("the agent got %q, want the upstream's answer", got)
	}
	if err := p.writeError(); err == nil || !strings.Contains(err.Error(), "llm.request of call 0") {
		t.Fatalf("writeError = %v, want the failed llm.request of call 0 named", err)
	}
	if got := postChat(t, p, 1); !strings.Contains(got, "jukebox_error") {
		t.Fatalf("call 1 after the tape failed: %q, want jukebox's refusal", got)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the upstream was asked %d times, want once: a call after the tape failed went out", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight != 0 {
		t.Fatalf("%d calls left in flight, want 0", p.inflight)
	}
}

// TestCallsRefusedOnceAnyFrameFailed: a trial filled the disk with the
// agent's output; the output frame failed, and the next model call still
// went upstream (its request frame written beside it), answered, on no
// tape. A call after any failed frame is refused unsent.
func TestCallsRefusedOnceAnyFrameFailed(t *testing.T) {
	var dst switchable
	w, err := tapefmt.NewWriter(&dst, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	upstream, asked := countedUpstream(t)
	p := overlapProxy(t, upstream, w, nil)
	dst.fail.Store(true)
	if _, err := w.Append(0, tapefmt.Output{Fd: 1, Data: noise()}); err == nil {
		t.Fatal("the output frame was taken by a destination that fails")
	}
	if got := postChat(t, p, 0); !strings.Contains(got, "jukebox_error") {
		t.Fatalf("a call after the output frame failed: %q, want jukebox's refusal", got)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the upstream was asked %d times, want none", n)
	}
}

// countedUpstream is sseUpstream's stream of 3 events behind a count of
// the calls that reached it; it returns its base URL and the count.
func countedUpstream(t *testing.T) (string, *atomic.Int64) {
	var asked atomic.Int64
	up := sseUpstream(t, 3)
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		up.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(counted.Close)
	return counted.URL + "/v1", &asked
}

// noise is 256 KiB that do not compress: a frame or blob of it is past
// the tape's write buffer, so its write reaches the destination at once.
func noise() []byte {
	b := make([]byte, 256<<10)
	rand.Read(b)
	return b
}

// switchable is a tape destination that fails every write once fail is set.
type switchable struct {
	fail atomic.Bool
	buf  bytes.Buffer
}

func (s *switchable) Write(b []byte) (int, error) {
	if s.fail.Load() {
		return 0, errors.New("disk full")
	}
	return s.buf.Write(b)
}

// failingFrom is a tape filter that makes its destination fail from the
// first request body it sees: the call is already upstream then.
type failingFrom struct{ dst *switchable }

func (failingFrom) Payload(p tapefmt.Payload) tapefmt.Payload { return p }
func (f failingFrom) Blob(b []byte) []byte {
	if bytes.Contains(b, []byte(`"messages"`)) {
		f.dst.fail.Store(true)
	}
	return b
}
func (failingFrom) Stream(b []byte, c tapefmt.Chunks) ([]byte, tapefmt.Chunks) { return b, c }

// TestStepAfterCommitWithACallInFlight: an SDK transaction that ended
// while a model call was in flight (a stream is until its body's end,
// which can come well after the agent read its last event) left its step
// open for good: nothing closed it when the call ended, and a crash then
// lost the commit and the calls. The step closes once no call is in
// flight.
func TestStepAfterCommitWithACallInFlight(t *testing.T) {
	var dst switchable
	w, err := tapefmt.NewWriter(&dst, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		<-release // the body's end comes later
	}))
	t.Cleanup(up.Close)
	p := overlapProxy(t, up.URL+"/v1", w, nil)
	done := make(chan string, 1)
	go func() { done <- postChat(t, p, 0) }()
	for { // the call is in flight once its request frame is
		p.mu.Lock()
		n := p.inflight
		p.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	if _, err := w.Append(0, tapefmt.TxCommit{Tx: "tx-1"}); err != nil {
		t.Fatal(err)
	}
	p.endStep() // the transaction's end, with the call in flight
	close(release)
	<-done
	p.Close()                            // the call's frames written
	data := bytes.Clone(dst.buf.Bytes()) // no footer: read as a crash leaves it
	tape, err := tapefmt.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for f, err := range tape.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, f.Kind.String())
	}
	got := strings.Join(kinds, " ")
	if !strings.Contains(got, "tx.commit") || !strings.Contains(got, "llm.response") {
		t.Fatalf("the tape as a crash leaves it: %s; want the commit and the call", got)
	}
}

// TestOverlappedRequestsInCallOrder: an agent that stops reading a stream
// at its [DONE] event and sends its next call at once on a new connection
// (the demo agent, clients that close on their protocol's end) had call
// 0's request frame, written beside the upstream call, land after call
// 1's on 4 of 10 tapes: request frames follow the calls' order.
func TestOverlappedRequestsInCallOrder(t *testing.T) {
	var buf bytes.Buffer
	// Storing call 0's request takes a while, as on a loaded machine.
	w, err := tapefmt.NewWriter(&buf, tapefmt.Options{Sync: tapefmt.SyncNever, Filter: slowFirst{}})
	if err != nil {
		t.Fatal(err)
	}
	p := overlapProxy(t, sseUpstream(t, 20).URL+"/v1", w, nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	history := strings.Repeat(`{"role":"user","content":"`+strings.Repeat("words ", 1000)+`"},`, 8) // about 48 KB
	const calls = 30
	for i := range calls {
		body := fmt.Sprintf(`{"model":"gpt-4o-mini","stream":true,"messages":[%s{"role":"user","content":"call %d"}]}`, history, i)
		resp, err := client.Post(p.baseURL(providers[0])+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		chunk := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(chunk)
			got = append(got, chunk[:n]...)
			if bytes.Contains(got, []byte("data: [DONE]\n\n")) {
				break
			}
			if err != nil {
				t.Fatalf("call %d: %v after %q", i, err, got)
			}
		}
		resp.Body.Close() // at [DONE], before the body's end
	}
	// The last call's frames are written once its handler ends, which
	// Close waits for.
	p.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tape, err := tapefmt.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var order []uint64
	for f, err := range tape.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			t.Fatal(err)
		}
		pl, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, pl.(*tapefmt.LLMRequest).Call)
	}
	for i, c := range order {
		if c != uint64(i) {
			t.Fatalf("request frames in the order of calls %v, want 0 to %d in order", order, calls-1)
		}
	}
	if len(order) != calls {
		t.Fatalf("%d request frames, want %d", len(order), calls)
	}
}

// slowFirst is a tape filter that takes 200 ms over the blob of the
// request of call 0 (its body ends "call 0"), and keeps everything as it is.
type slowFirst struct{}

func (slowFirst) Payload(p tapefmt.Payload) tapefmt.Payload { return p }
func (slowFirst) Blob(b []byte) []byte {
	if bytes.HasSuffix(b, []byte(`"call 0"}]}`)) {
		time.Sleep(200 * time.Millisecond)
	}
	return b
}
func (slowFirst) Stream(b []byte, c tapefmt.Chunks) ([]byte, tapefmt.Chunks) { return b, c }
