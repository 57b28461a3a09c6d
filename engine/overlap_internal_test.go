package engine

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
func TestOverlappedRequestWriteErrorReachesTheRun(t *testing.T) {
	w, err := tapefmt.NewWriter(&failAfter{n: 1 << 30}, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	p := overlapProxy(t, sseUpstream(t, 3).URL+"/v1", w, nil)
	w.Close() // every write fails from here
	if got := postChat(t, p, 0); !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("the agent got %q, want the upstream's answer", got)
	}
	if err := p.writeError(); err == nil || !strings.Contains(err.Error(), "llm.request of call 0") {
		t.Fatalf("writeError = %v, want the failed llm.request of call 0 named", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight != 0 {
		t.Fatalf("%d calls left in flight, want 0", p.inflight)
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
