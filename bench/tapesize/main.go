// Command tapesize compares the size of a recorded agent run on a tape with
// the same interactions in a go-vcr v4 YAML cassette, the peer named by issue
// 2 (target: tape <= 0.25x cassette). Both are built from the same data in
// the same run: the 50-step streamed run with resent history from
// internal/tapegen. For honesty it also prints the tape size with the
// proc.output frames (the agent echoing each streamed chunk to stdout, which
// a cassette does not record) left out.
//
//	go -C bench run ./tapesize [-steps 50] [-chunks 72]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v4"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// target is the largest tape/cassette ratio issue 2 accepts.
const target = 0.25

func main() {
	steps := flag.Int("steps", 50, "agent steps in the run")
	chunks := flag.Int("chunks", 72, "streamed chunks per response")
	flag.Parse()
	if err := run(tapegen.Spec{Steps: *steps, Chunks: *chunks, Model: "gpt-4o-mini"}); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tapesize:", err)
		os.Exit(1)
	}
}

func run(spec tapegen.Spec) error {
	tape, err := writeTape(spec)
	if err != nil {
		return err
	}
	if err := check(tape); err != nil {
		return err
	}
	quiet, outputs, err := withoutOutput(tape)
	if err != nil {
		return err
	}
	cas, err := cassetteSize(tapegen.Interactions(spec))
	if err != nil {
		return err
	}
	fmt.Printf("run: %d steps, %d streamed chunks per response, model %s\n", spec.Steps, spec.Chunks, spec.Model)
	fmt.Printf("go-vcr v4 cassette (YAML)        %10d bytes\n", cas)
	fmt.Printf("tape (.jbx)                      %10d bytes  ratio %.4fx  (target <= %.2fx)  %s\n",
		len(tape), ratio(len(tape), cas), target, verdict(ratio(len(tape), cas)))
	fmt.Printf("tape without proc.output frames  %10d bytes  ratio %.4fx  (%s)\n", len(quiet), ratio(len(quiet), cas), verdict(ratio(len(quiet), cas)))
	fmt.Printf("proc.output frames (%d echoed chunks, records and index entries) cost %d bytes\n", outputs, len(tape)-len(quiet))
	return nil
}

func ratio(a, b int) float64 { return float64(a) / float64(b) }

func verdict(r float64) string {
	if r <= target {
		return "PASS"
	}
	return "FAIL"
}

// writeTape records the run with the same writer options as the sample tapes.
func writeTape(spec tapegen.Spec) ([]byte, error) {
	var buf bytes.Buffer
	opts, _ := tapegen.Options()
	w, err := tapefmt.NewWriter(&buf, opts)
	if err != nil {
		return nil, err
	}
	if err := tapegen.Write(w, spec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// withoutOutput copies a tape frame by frame, with its blobs, leaving out the
// proc.output frames. Blobs go into the same lanes as the recorder's (one
// per kind, one per file path), so deltas work as they did on the original.
func withoutOutput(tape []byte) (out []byte, skipped int, err error) {
	src, err := tapefmt.NewReader(bytes.NewReader(tape), int64(len(tape)))
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	opts, _ := tapegen.Options()
	w, err := tapefmt.NewWriter(&buf, opts)
	if err != nil {
		return nil, 0, err
	}
	for f, err := range src.Frames() {
		if err != nil {
			return nil, 0, err
		}
		if f.Kind == tapefmt.KindOutput {
			skipped++
			continue
		}
		if err := copyBlobs(w, src, f); err != nil {
			return nil, 0, err
		}
		if _, err := w.AppendFrame(f); err != nil {
			return nil, 0, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), skipped, check(buf.Bytes())
}

// check verifies a tape in full, so the figures are those of a valid tape.
func check(tape []byte) error {
	t, err := tapefmt.NewReader(bytes.NewReader(tape), int64(len(tape)))
	if err != nil {
		return err
	}
	_, err = t.Verify(tapefmt.VerifyOptions{Blobs: true})
	return err
}

func copyBlobs(w *tapefmt.Writer, src *tapefmt.Tape, f tapefmt.Frame) error {
	p, err := f.Decode()
	if err != nil {
		return err
	}
	lane := f.Kind.String()
	if fc, ok := p.(*tapefmt.FileChange); ok {
		lane = "file " + fc.Path
	}
	for _, h := range tapefmt.BlobRefs(p) {
		b, err := src.Blob(h)
		if err != nil {
			return err
		}
		if _, err := w.PutBlob(lane, b); err != nil {
			return err
		}
	}
	return nil
}

// cassetteSize saves the interactions as go-vcr would record them and
// returns the size of the YAML file.
func cassetteSize(ins []tapegen.Interaction) (int, error) {
	dir, err := os.MkdirTemp("", "tapesize-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	c := cassette.New(filepath.Join(dir, "run"))
	c.MarshalFunc = yaml.Marshal // what go-vcr's recorder sets
	for _, in := range ins {
		c.AddInteraction(interaction(in))
	}
	if err := c.Save(); err != nil {
		return 0, err
	}
	st, err := os.Stat(c.File)
	if err != nil {
		return 0, err
	}
	return int(st.Size()), nil
}

// interaction fills the fields go-vcr's recorder fills for a streamed chat
// completion over HTTP/1.1, without the Authorization header (go-vcr users
// strip it with a hook; the tape writer drops it itself).
func interaction(in tapegen.Interaction) *cassette.Interaction {
	h := tapegen.Header()
	h.Del("Authorization")
	elapsed := time.Duration(in.Chunks[len(in.Chunks)-1].At)
	return &cassette.Interaction{
		Request: cassette.Request{
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			ContentLength: int64(len(in.Request)), Host: "api.openai.com",
			Body: string(in.Request), Headers: h, Form: nil,
			URL: "https://api.openai.com/v1/chat/completions", Method: http.MethodPost,
		},
		Response: cassette.Response{
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			TransferEncoding: []string{"chunked"}, ContentLength: -1,
			Body:    string(in.Response),
			Headers: http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}},
			Status:  "200 OK", Code: http.StatusOK, Duration: elapsed,
		},
	}
}
