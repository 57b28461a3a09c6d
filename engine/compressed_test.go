package engine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// gzipClient makes a plain and a streamed chat completion and prints, for
// each, the Content-Encoding it got and the hash of the bytes it read:
// urllib does not decompress, so these are the bytes on the wire.
const gzipClient = `
import hashlib, json, os, urllib.request
for stream in (False, True):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "gpt-4o-mini", "stream": stream, "messages": [{"role": "user", "content": "which side first?"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        b = r.read()
        print(r.headers.get("Content-Encoding"), len(b), hashlib.sha256(b).hexdigest())
`

const (
	plainAnswer  = "The needle drops on frame seven."
	streamAnswer = "Side A plays first."
)

var streamDeltas = []string{"Side ", "A ", "plays ", "first."}

// gzipUpstream answers chat completions gzip-compressed, whether or not it
// was asked to (some gateways do), and keeps the bytes it sent per call.
type gzipUpstream struct {
	mu   sync.Mutex
	sent map[bool][]byte // by "stream"
}

func (u *gzipUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	var wire bytes.Buffer
	out := io.MultiWriter(w, &wire)
	w.Header().Set("Content-Encoding", "gzip")
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		gz := gzip.NewWriter(out)
		fmt.Fprintf(gz, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`, plainAnswer)
		gz.Close()
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
		gz := gzip.NewWriter(out)
		event := func(s string) {
			fmt.Fprintf(gz, "data: %s\n\n", s)
			gz.Flush() // a sync flush: each event decodes as it arrives
			w.(http.Flusher).Flush()
			time.Sleep(15 * time.Millisecond)
		}
		for _, d := range streamDeltas {
			event(fmt.Sprintf(`{"id":"chatcmpl-2","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":%q}}]}`, d))
		}
		event(`{"id":"chatcmpl-2","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":13,"completion_tokens":5,"total_tokens":18}}`)
		event("[DONE]")
		gz.Close()
	}
	u.mu.Lock()
	u.sent[req.Stream] = wire.Bytes()
	u.mu.Unlock()
}

// TestRecordGzipUpstream: a gzip-compressed answer, plain and streamed, is
// recorded byte for byte as the upstream sent it and replayed so; the
// response frame still has the model and usage, and the timeline, the
// frame view, search and diff read the decoded text.
func TestRecordGzipUpstream(t *testing.T) {
	t.Parallel()
	up := &gzipUpstream{sent: map[bool][]byte{}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	run := &agentRun{argv: []string{testenv.RequirePython(t), "-c", gzipClient}, dir: t.TempDir(), env: append(cleanEnv(), "OPENAI_API_KEY="+secretKey)}
	tape := filepath.Join(t.TempDir(), "gzip.jbx")
	var stderr bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &run.stdout, Stderr: &stderr},
		Tape:       tape, Upstreams: map[string]string{"openai": srv.URL + "/v1"}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, exit %d: %s", err, res.End.ExitCode, stderr.String())
	}
	checkTape(t, tape)
	var want strings.Builder
	for _, stream := range []bool{false, true} {
		sum := sha256.Sum256(up.sent[stream])
		fmt.Fprintf(&want, "gzip %d %s\n", len(up.sent[stream]), hex.EncodeToString(sum[:]))
	}
	if run.stdout.String() != want.String() {
		t.Fatalf("the agent read\n%s, the upstream sent\n%s", run.stdout.String(), want.String())
	}

	checkGzipFrames(t, tape, up)
	checkGzipTimeline(t, tape)

	srv.Close()
	res, out := replay(t, run, tape, cleanEnv())
	if out != want.String() || res.Divergence != nil {
		t.Fatalf("replay: the agent read\n%s, recorded\n%s(divergence %v)", out, want.String(), res.Divergence)
	}
}

// checkGzipFrames: the bodies on the tape are the upstream's bytes, and the
// response frames say how they were encoded and what they cost.
func checkGzipFrames(t *testing.T, tape string, up *gzipUpstream) {
	t.Helper()
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	wantUsage := []tapefmt.Usage{{Input: 11, Output: 7}, {Input: 13, Output: 5}}
	n := 0
	for f, err := range tp.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		resp := p.(*tapefmt.LLMResponse)
		body, err := tp.Blob(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, up.sent[n == 1]) || resp.Size != int64(len(body)) {
			t.Errorf("response %d: the tape holds %d bytes, not the %d the upstream sent", n, len(body), len(up.sent[n == 1]))
		}
		if resp.Encoding != "gzip" || resp.Undecodable != "" || resp.Model != "gpt-4o-mini-2024-07-18" || resp.Usage != wantUsage[n] {
			t.Errorf("response %d: encoding %q undecodable %q model %q usage %+v", n, resp.Encoding, resp.Undecodable, resp.Model, resp.Usage)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d responses on the tape", n)
	}
	if s, err := timeline.Summarize(tape, tp); err != nil || s.Usage != (tapefmt.Usage{Input: 24, Output: 12}) || s.Cost <= 0 {
		t.Fatalf("summary (jukebox ls): usage %+v cost %v (%v)", s.Usage, s.Cost, err)
	}
}

// checkGzipTimeline: the turntable's frame view, its search and the diff
// show the decoded request and answer.
func checkGzipTimeline(t *testing.T, tape string) {
	t.Helper()
	tl, err := timeline.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	var calls []*timeline.CallDetail
	for i := range tl.Len() {
		if k, _ := tl.KindAt(i); k == tapefmt.KindLLMResponse {
			if r := tl.Row(i); r.Tokens != 18 || !r.Priced {
				t.Errorf("row %d: %d tokens, priced %v", i, r.Tokens, r.Priced)
			}
			calls = append(calls, mustDetail(t, tl, i).Call)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	for n, c := range calls {
		answer := []string{plainAnswer, streamAnswer}[n]
		if c.Answer != answer || c.ResponseCoding.Note() != "gzip, decoded" || c.RequestCoding.Encoding != "" ||
			len(c.Messages) != 1 || c.Messages[0].Text != "which side first?" {
			t.Errorf("call %d: answer %q coding %+v messages %+v", n, c.Answer, c.ResponseCoding, c.Messages)
		}
	}
	// The stream's chunk times count compressed bytes; the view decodes
	// what had arrived.
	s := calls[1]
	if len(s.Chunks) < 3 {
		t.Fatalf("stream recorded in %d chunks", len(s.Chunks))
	}
	half, done := s.Streamed(time.Duration(s.Chunks[1].At))
	if done || half == "" || !strings.HasPrefix(streamAnswer, half) || half == streamAnswer {
		t.Errorf("streamed at chunk 1: %q done=%v", half, done)
	}
	if all, done := s.Streamed(time.Hour); !done || all != streamAnswer {
		t.Errorf("streamed to the end: %q done=%v", all, done)
	}
	if i, err := tl.Search(context.Background(), "needle drops", 0, 1); err != nil || i < 0 {
		t.Errorf("search for the decoded answer: %d %v", i, err)
	}
	dt, err := timeline.LoadForDiff(tape)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, f := range dt.Frames {
		if f.Kind == "llm.response" {
			bodies = append(bodies, f.Body)
			if f.Tokens != 18 {
				t.Errorf("diff frame %d: %d tokens", f.Seq, f.Tokens)
			}
		}
	}
	if strings.Join(bodies, "|") != plainAnswer+"|"+streamAnswer {
		t.Errorf("diff bodies %q", bodies)
	}
}

func mustDetail(t *testing.T, tl *timeline.Timeline, i int) *timeline.Detail {
	t.Helper()
	d, err := tl.Detail(i)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
