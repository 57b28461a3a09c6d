package timeline_test

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestTimelineReadsCompressedBodiesOfOldTapes: a tape written before
// responses carried their encoding (and one whose usage was never read)
// is read by the headers: usage from the decoded body, and a compressed
// request body shown as its messages.
func TestTimelineReadsCompressedBodiesOfOldTapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gz := func(s string) []byte {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, s)
		z.Close()
		return b.Bytes()
	}
	reqBody := gz(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"compressed question"}]}`)
	respBody := gz(`{"model":"gpt-4o-mini","choices":[{"message":{"role":"assistant","content":"compressed answer"}}],"usage":{"prompt_tokens":40,"completion_tokens":2}}`)
	rh, _ := w.PutBlob("req", reqBody)
	sh, _ := w.PutBlob("resp", respBody)
	enc := http.Header{"Content-Encoding": {"gzip"}, "Content-Type": {"application/json"}}
	w.Append(0, tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Header: enc, Body: rh, Size: int64(len(reqBody))})
	w.Append(0, tapefmt.LLMResponse{Status: 200, Header: enc, Body: sh, Size: int64(len(respBody))})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if r := tl.Row(1); r.Tokens != 42 || !r.Priced {
		t.Fatalf("response row: %d tokens, priced %v", r.Tokens, r.Priced)
	}
	c := mustDetail(t, tl, 0).Call
	if c.Answer != "compressed answer" || len(c.Messages) != 1 || c.Messages[0].Text != "compressed question" ||
		c.RequestCoding.Note() != "gzip, decoded" || c.Usage.Input != 40 {
		t.Fatalf("call: answer %q messages %+v request coding %+v usage %+v", c.Answer, c.Messages, c.RequestCoding, c.Usage)
	}
	dt, err := timeline.LoadForDiff(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(dt.Frames) != 2 || !strings.Contains(dt.Frames[0].Body, "user: compressed question") ||
		dt.Frames[1].Body != "compressed answer" || dt.Frames[1].Tokens != 42 {
		t.Fatalf("diff frames %+v", dt.Frames)
	}
	if got := llmwire.PayloadBody(&tapefmt.LLMResponse{Header: enc}, respBody); !bytes.Contains(got.Text, []byte("compressed answer")) {
		t.Fatalf("PayloadBody: %q", got.Text)
	}
}
