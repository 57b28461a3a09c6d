package tapegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// clock hands out deterministic, increasing time offsets.
type clock struct{ t time.Duration }

func (c *clock) now() time.Duration { c.t += 3 * time.Millisecond; return c.t }

// Options returns writer options that make a reproducible tape.
func Options() (tapefmt.Options, *clock) {
	c := &clock{}
	return tapefmt.Options{Sync: tapefmt.SyncNever, Now: c.now, Created: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC),
		ID:     [16]byte{'j', 'u', 'k', 'e', 'b', 'o', 'x', '-', 's', 'a', 'm', 'p', 'l', 'e'},
		Filter: redact.NewFilter(nil)}, c
}

// Write records the run described by s onto w, without closing it: a
// run.start, then per step the request, the streamed response, the echoed
// chunks, the tool call, its result, the file it wrote and a step commit,
// then a run.end.
func Write(w *tapefmt.Writer, s Spec) error {
	e := &errWriter{w: w}
	e.append(0, tapefmt.RunStart{Name: "sample-agent", Argv: []string{"python", "agent.py"}, Cwd: "/work/demo",
		Env: map[string]string{"LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-test-not-a-real-key"}, Seed: 42,
		Host: "sample", Version: "0.1.0", Mode: tapefmt.ModeRecord, Started: "2026-12-01T09:30:00Z", Tags: s.Tags})
	e.append(0, tapefmt.Seed{Seed: 42, Source: "JUKEBOX_SEED"})
	for i, in := range Interactions(s) {
		writeStep(e, s, i, in)
	}
	e.append(0, tapefmt.RunEnd{ExitCode: 0})
	return e.err
}

func writeStep(e *errWriter, s Spec, i int, in Interaction) {
	call := uint64(i)
	body := e.blob("POST /v1/chat/completions", in.Request)
	e.append(0, tapefmt.LLMRequest{Call: call, Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
		Header: Header(), Body: body, Size: int64(len(in.Request)), Model: s.Model, Stream: true})
	for _, w := range in.Words {
		e.append(0, tapefmt.Output{Fd: 1, Data: tapefmt.Bytes(w)})
	}
	resp := e.blob("POST /v1/chat/completions response", in.Response)
	e.append(0, tapefmt.LLMResponse{Call: call, Status: 200, Body: resp, Size: int64(len(in.Response)),
		Header: map[string][]string{"Content-Type": {"text/event-stream"}}, Chunks: in.Chunks, Model: s.Model,
		Usage:   tapefmt.Usage{Input: int64(len(in.Request) / 4), Output: int64(s.Chunks + 20)},
		Latency: int64(200 * time.Millisecond), Elapsed: in.Chunks[len(in.Chunks)-1].At})
	id := callID(i)
	e.append(0, tapefmt.ToolCall{ID: id, Name: "write_file", Args: json.RawMessage(in.Tool), Source: tapefmt.SourceLLM})
	var args struct{ Path, Content string }
	_ = json.Unmarshal([]byte(in.Tool), &args)
	content := e.blob("file "+args.Path, []byte(args.Content))
	e.append(0, tapefmt.FileChange{Op: tapefmt.OpWrite, Path: args.Path, Mode: 0o644, Size: int64(len(args.Content)), Body: content})
	e.append(0, tapefmt.ToolResult{ID: id, Result: json.RawMessage(fmt.Sprintf(`"wrote %d bytes"`, len(args.Content)))})
	e.append(0, tapefmt.Clock{Unix: time.Date(2026, 12, 1, 9, 30, i, 0, time.UTC).UnixNano(), Source: "time.time"})
	if e.err == nil {
		_, e.err = e.w.Commit()
	}
}

// errWriter keeps the first error so the sequence above reads straight.
type errWriter struct {
	w   *tapefmt.Writer
	err error
}

func (e *errWriter) append(stream uint32, p tapefmt.Payload) {
	if e.err == nil {
		_, e.err = e.w.Append(stream, p)
	}
}

func (e *errWriter) blob(lane string, b []byte) tapefmt.Hash {
	if e.err != nil {
		return tapefmt.Hash{}
	}
	h, err := e.w.PutBlob(lane, b)
	e.err = err
	return h
}

// WriteFile records the run described by s as a closed, reproducible tape
// at path, which must not exist. The tape is made and checked in memory
// first (see Bytes): one that does not read back is an error, and no file
// is written.
func WriteFile(path string, s Spec) error {
	b, err := Bytes(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("tapegen: %w", err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("tapegen: write %s: %w", path, err)
	}
	return nil
}

// Bytes records the run described by s as a closed, reproducible tape and
// returns its bytes once Check has read them back in full.
func Bytes(s Spec) ([]byte, error) {
	var buf bytes.Buffer
	opts, _ := Options()
	if s.ID != ([16]byte{}) {
		opts.ID = s.ID
	}
	w, err := tapefmt.NewWriter(&buf, opts)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(Write(w, s), w.Close()); err != nil {
		return nil, err
	}
	if err := Check(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Check reads the tape in b back as a reader would, in full: it must open
// by its footer and verify (every CRC, the hash chain, the index, and every
// blob decoded and re-hashed), and every frame's payload must decode with
// every blob it names. The generator refuses to emit a tape that fails.
func Check(b []byte) error { return CheckSealed(b, nil) }

// CheckSealed is Check that also checks the seal with key, when key is not
// nil.
func CheckSealed(b, key []byte) error {
	t, err := tapefmt.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("tapegen: the tape made does not open: %w", err)
	}
	if rec := t.Recovered(); rec != nil {
		return fmt.Errorf("tapegen: the tape made has no footer: %d bytes after offset %d do not read", rec.BytesDropped(), rec.ValidEnd)
	}
	return checkKept(t, key)
}

// checkKept verifies t, which may have been recovered. With Blobs, Verify
// decodes every payload it keeps, checks that each blob named is on the
// tape, and decodes and re-hashes every blob.
func checkKept(t *tapefmt.Tape, key []byte) error {
	if _, err := t.Verify(tapefmt.VerifyOptions{Blobs: true, Key: key}); err != nil {
		return fmt.Errorf("tapegen: the tape made does not verify: %w", err)
	}
	return nil
}

// CheckTorn is Check for a tape cut short on purpose: it must open by
// recovery, and what recovery keeps must check as a whole tape does.
func CheckTorn(b []byte) error {
	t, err := tapefmt.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("tapegen: the torn tape made does not open: %w", err)
	}
	if t.Recovered() == nil {
		return errors.New("tapegen: the torn tape made opens without recovery")
	}
	return checkKept(t, nil)
}
