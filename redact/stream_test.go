package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// sse is a streamed chat answer that says text in the given pieces, one
// event per chunk, and its chunk table.
func sse(pieces ...string) ([]byte, tapefmt.Chunks) {
	var b bytes.Buffer
	var chunks tapefmt.Chunks
	for i, p := range pieces {
		ev, _ := json.Marshal(map[string]any{"id": "c1", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": p}}}})
		b.WriteString("data: " + string(ev) + "\n\n")
		chunks = append(chunks, tapefmt.Chunk{End: int64(b.Len()), At: int64(i + 1)})
	}
	b.WriteString("data: [DONE]\n\n")
	chunks = append(chunks, tapefmt.Chunk{End: int64(b.Len()), At: int64(len(pieces) + 1)})
	return b.Bytes(), chunks
}

// assembled is the text an SSE body says, its deltas joined.
func assembled(t *testing.T, body []byte) string {
	t.Helper()
	var text strings.Builder
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q is no longer JSON: %v", data, err)
		}
		text.WriteString(ev.Choices[0].Delta.Content)
	}
	return text.String()
}

// TestStreamSplitSecret: a secret the model streams split across tokens
// (SEC|RET|-PROM|PT) is masked in the assembled answer; the events stay
// JSON and the chunk table fits the bytes kept.
func TestStreamSplitSecret(t *testing.T) {
	t.Parallel()
	m, err := NewMasker([]string{`SECRET-PROMPT`})
	if err != nil {
		t.Fatal(err)
	}
	body, chunks := sse("The code is ", "SEC", "RET", "-PROM", "PT", ", keep it.")
	got, gotChunks := NewFilter(m).Stream(body, chunks)
	text := assembled(t, got)
	if strings.Contains(text, "SECRET-PROMPT") || strings.Contains(string(got), "PROM") {
		t.Fatalf("the split secret is on the tape: %q", text)
	}
	if want := "The code is " + Redacted + ", keep it."; text != want {
		t.Errorf("assembled %q, want %q", text, want)
	}
	if len(gotChunks) != len(chunks) || gotChunks[len(gotChunks)-1].End != int64(len(got)) {
		t.Fatalf("chunk table %v does not fit %d bytes", gotChunks, len(got))
	}
	for i := 1; i < len(gotChunks); i++ {
		if gotChunks[i].End < gotChunks[i-1].End || gotChunks[i].At != chunks[i].At {
			t.Fatalf("chunk table %v", gotChunks)
		}
	}
	// Another secret of another length gives the same bytes.
	body2, chunks2 := sse("The code is ", "SEC", "RET-PROMPT", ", keep it.")
	m2, _ := NewMasker([]string{`SECRET-PROMPT`})
	got2, _ := NewFilter(m2).Stream(body2, chunks2)
	if assembled(t, got2) != text {
		t.Errorf("assembled %q and %q differ", assembled(t, got2), text)
	}
}

// TestStreamScanIsStream: a body written to a StreamScan in pieces of
// any size masks to the bytes and chunk table Stream gives for it whole:
// a secret split across events, a default credential, a body that is not
// server-sent events, one with no blank line at its end, CRLF lines, an
// empty one. A body other than the one written is read anew, never
// masked from the scan of another.
func TestStreamScanIsStream(t *testing.T) {
	t.Parallel()
	m, err := NewMasker([]string{`SECRET-PROMPT`})
	if err != nil {
		t.Fatal(err)
	}
	split, splitChunks := sse("The code is ", "SEC", "RET", "-PROM", "PT", ", keep it.")
	key, keyChunks := sse("use ", "sk-proj-", "abcdefghijklmnopqrstuvwxyz012345", " now")
	bodies := []struct {
		data   []byte
		chunks tapefmt.Chunks
	}{
		{split, splitChunks},
		{key, keyChunks},
		{[]byte(`{"choices":[{"message":{"content":"SECRET-PROMPT"}}]}`), nil},
		{[]byte("data: {\"t\":\"SECRET-\"}\r\n\r\ndata: {\"t\":\"PROMPT\"}\r\n\r\ndata: {\"t\":\"x\"}"), nil},
		{[]byte("data: {\"t\":\"SECRET-PROMPT\"}"), nil},
		{nil, nil},
	}
	for n, b := range bodies {
		want, wantChunks := m.Stream(b.data, b.chunks)
		for size := 1; size <= len(b.data)+1; size++ {
			s := m.NewStream()
			for i := 0; i < len(b.data); i += size {
				s.Write(b.data[i:min(i+size, len(b.data))])
			}
			got, gotChunks := s.Finish(b.data, b.chunks)
			if !bytes.Equal(got, want) || !slices.Equal(gotChunks, wantChunks) {
				t.Fatalf("body %d written %d bytes at a time: %q %v, want %q %v", n, size, got, gotChunks, want, wantChunks)
			}
		}
	}
	s := m.NewStream()
	s.Write([]byte("data: {\"t\":\"harmless\"}\n\n"))
	if got, _ := s.Finish(split, splitChunks); bytes.Contains(got, []byte("PROM")) {
		t.Fatalf("a body other than the one written was masked from its scan: %q", got)
	}
}
