package timeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// Frames of the tape damagedTape writes.
const (
	badRequest  = 1 // llm.request whose body blob is damaged
	badResponse = 2 // its llm.response (its own body reads)
	goodRequest = 7 // a second call, untouched
)

// writeCheckTape writes a small two-step run to dir/name: run.start, then per
// step an llm.request and its llm.response (bodies as blobs), a tool call
// and result and a file change, then step.commit; run.end last. The request
// bodies are over 256 bytes and in lanes of their own, so neither is a delta
// of the other.
func writeCheckTape(t *testing.T, dir, name string) (path string, reqBody tapefmt.Hash) {
	t.Helper()
	path = filepath.Join(dir, name)
	opts, _ := tapegen.Options()
	err := tapefmt.CreateWith(path, opts, func(w *tapefmt.Writer) error {
		var errs []error
		add := func(p tapefmt.Payload) { _, err := w.Append(0, p); errs = append(errs, err) }
		put := func(lane, s string) tapefmt.Hash {
			h, err := w.PutBlob(lane, []byte(s))
			errs = append(errs, err)
			return h
		}
		add(tapefmt.RunStart{Name: "check", Argv: []string{"python", "agent.py"}, Mode: "record"})
		for i, word := range []string{"marmalade", "quince"} {
			pad := strings.Repeat("Answer in one line. ", 12)
			req := put("req"+word, `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are the `+word+
				` agent. `+pad+`"},{"role":"user","content":"find the `+word+` needle"}]}`)
			if i == 0 {
				reqBody = req
			}
			resp := put("resp"+word, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":"the `+word+` answer. `+pad+`"},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`)
			add(tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
				Body: req, Model: "gpt-4o-mini"})
			add(tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: resp, Model: "gpt-4o-mini",
				Header: map[string][]string{"Content-Type": {"application/json"}}, Usage: tapefmt.Usage{Input: 50, Output: 10}})
			add(tapefmt.ToolCall{ID: "t" + word, Name: "write_file", Args: []byte(`{"path":"a.txt"}`), Source: "llm"})
			add(tapefmt.ToolResult{ID: "t" + word, Result: []byte(`"ok"`)})
			add(tapefmt.FileChange{Op: "write", Path: "a.txt", Body: put("file"+word, word+"\n")})
			_, err := w.Commit()
			errs = append(errs, err)
		}
		add(tapefmt.RunEnd{})
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path) // whole, before a test damages it
	return path, reqBody
}

// damagedTimeline opens writeCheckTape's tape with frame 1's request body damaged.
func damagedTimeline(t *testing.T) (*timeline.Timeline, int64) {
	t.Helper()
	path, h := writeCheckTape(t, t.TempDir(), "damaged.jbx")
	off := tapetest.DamageBlob(t, path, h)
	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl, off
}

func wantFrameError(t *testing.T, err error, frame int, off int64) {
	t.Helper()
	var fe *timeline.FrameError
	if !errors.As(err, &fe) || fe.Frame != frame || fe.Offset != off || fe.Reason != "checksum mismatch" || fe.Blob.IsZero() {
		t.Fatalf("error %v (%#v), want frame %d at offset %d: checksum mismatch", err, fe, frame, off)
	}
	var tf *tapefmt.FormatError
	if !errors.As(err, &tf) {
		t.Fatalf("%v does not wrap the tapefmt.FormatError", err)
	}
}

// TestDetailDamagedBlob: a request whose body does not read is an error in
// the detail of both halves of the call, never an empty context.
func TestDetailDamagedBlob(t *testing.T) {
	tl, off := damagedTimeline(t)
	d := mustDetail(t, tl, badRequest)
	if d.Call == nil || len(d.Call.Messages) != 0 {
		t.Fatalf("call %+v", d.Call)
	}
	wantFrameError(t, d.Call.RequestErr, badRequest, off)
	wantFrameError(t, d.Blobs[0].Err, badRequest, off)
	if d.Call.ResponseErr != nil || !strings.Contains(d.Call.Answer, "marmalade answer") {
		t.Fatalf("the response reads: err %v, answer %q", d.Call.ResponseErr, d.Call.Answer)
	}
	if errs := d.Errs(); len(errs) != 1 || errs[0].Frame != badRequest {
		t.Fatalf("Errs = %v", errs)
	}
	msg := d.Call.RequestErr.Error()
	if want := "frame 1 unreadable: its body blob " + d.Blobs[0].Hash.Short(); !strings.HasPrefix(msg, want) ||
		!strings.HasSuffix(msg, "checksum mismatch") || !strings.Contains(msg, "offset") {
		t.Fatalf("message %q", msg)
	}
	wantFrameError(t, mustDetail(t, tl, badResponse).Call.RequestErr, badRequest, off)
	if r := tl.Row(badRequest); !r.Error || r.Damage == nil {
		t.Fatalf("row of the damaged frame: %+v", r)
	}
	if good := mustDetail(t, tl, goodRequest); good.Call.RequestErr != nil || len(good.Call.Messages) != 2 || len(good.Errs()) != 0 {
		t.Fatalf("the untouched call: %+v", good.Call)
	}
}

// TestSearchReportsUnreadable: a search over a frame whose blob does not
// read says so instead of finding nothing in silence.
func TestSearchReportsUnreadable(t *testing.T) {
	tl, off := damagedTimeline(t)
	r, err := tl.SearchReport(context.Background(), "marmalade needle", 0, 1)
	if err != nil || r.Frame != -1 || r.Unreadable != 1 {
		t.Fatalf("search = %+v, %v", r, err)
	}
	wantFrameError(t, r.First, badRequest, off)
	if r, _ := tl.SearchReport(context.Background(), "quince needle", 0, 1); r.Frame != goodRequest || r.Unreadable != 1 {
		t.Fatalf("search past the damage = %+v", r)
	}
}

// TestCheckDamaged: the whole-tape check lists the damaged frame, and from
// then on Next(FindError) stops at it.
func TestCheckDamaged(t *testing.T) {
	tl, off := damagedTimeline(t)
	if i, ok := tl.Next(0, timeline.FindError, 1); ok {
		t.Fatalf("an error at %d before anything read the damage", i)
	}
	c, err := tl.Check(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != timeline.TapeDamaged || len(c.Damage) != 1 || c.FirstDamaged() != badRequest || c.Err == nil || c.Frames != tl.Len() {
		t.Fatalf("check = %+v", c)
	}
	wantFrameError(t, c.Damage[0], badRequest, off)
	if i, ok := tl.Next(0, timeline.FindError, 1); !ok || i != badRequest {
		t.Fatalf("next error = %d %v", i, ok)
	}
	if i, ok := tl.Next(tl.Len()-1, timeline.FindError, -1); !ok || i != badRequest {
		t.Fatalf("previous error = %d %v", i, ok)
	}
}

// TestCheckStates: each verdict of the check, from the sample tapes and a
// sealed one checked with and without the right key.
func TestCheckStates(t *testing.T) {
	key, err := os.ReadFile("../testdata/tapes/seal.key")
	if err != nil {
		t.Fatal(err)
	}
	key = bytes.TrimSpace(key)
	cases := []struct {
		tape string
		key  []byte
		want timeline.TapeState
	}{
		{"agent-run.jbx", nil, timeline.TapeChainOK},
		{"torn.jbx", nil, timeline.TapeTorn},
		{"torn.jbx", key, timeline.TapeTorn},
		{"sealed.jbx", nil, timeline.TapeSealed},
		{"sealed.jbx", key, timeline.TapeSealOK},
		{"sealed.jbx", []byte("not the key that sealed it"), timeline.TapeSealBad},
		{"agent-run.jbx", key, timeline.TapeSealBad}, // not sealed at all
		{"tampered.jbx", nil, timeline.TapeDamaged},
	}
	for _, c := range cases {
		tl := openTimeline(t, c.tape)
		got, err := tl.Check(context.Background(), c.key)
		if err != nil || got.State != c.want {
			t.Fatalf("%s (key %v): %+v, %v; want state %d", c.tape, c.key != nil, got, err, c.want)
		}
		if c.tape == "tampered.jbx" {
			// Only the chain catches it: every frame reads, the step frame after the edit does not check out.
			if len(got.Damage) != 1 || tl.Row(got.FirstDamaged()).Kind != tapefmt.KindStep || !strings.Contains(got.Err.Error(), "chain") {
				t.Fatalf("tampered: %+v", got)
			}
		}
	}
}

// TestCheckCancelled: a cancelled check stops and says so.
func TestCheckCancelled(t *testing.T) {
	tl := openTimeline(t, "agent-run.jbx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := tl.Check(ctx, nil); !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("cancelled check = %+v, %v", c, err)
	}
	if _, err := tl.Check(context.Background(), []byte("short")); err == nil {
		t.Fatal("a 5-byte key was taken")
	}
}

// failingAt is a tape's bytes whose reads across [lo, hi) fail, as a
// store that stopped answering would.
type failingAt struct {
	b      []byte
	lo, hi int64
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off < f.hi && off+int64(len(p)) > f.lo {
		return 0, errors.New("connection reset by the store")
	}
	return bytes.NewReader(f.b).ReadAt(p, off)
}

// TestUnreadIsNoDamage: a frame whose bytes did not arrive (a store that
// stopped answering) is said to be unread, not damaged, and is not kept as
// damage: reading it again may work.
func TestUnreadIsNoDamage(t *testing.T) {
	b, err := os.ReadFile("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 2
	f, err := tp.Frame(frame)
	tp.Close()
	if err != nil {
		t.Fatal(err)
	}
	remote := func(name string) (io.ReaderAt, int64, io.Closer, bool, error) {
		return failingAt{b: b, lo: f.Offset, hi: f.Offset + f.Size()}, int64(len(b)), io.NopCloser(nil), true, nil
	}
	tl, err := timeline.OpenWith("fake://store/run.jbx", remote)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	_, err = tl.Detail(frame)
	var fe *timeline.FrameError
	if !errors.As(err, &fe) || !fe.Unread || !strings.Contains(err.Error(), "connection reset by the store") {
		t.Fatalf("Detail of a frame whose bytes did not arrive: %v", err)
	}
	if r := tl.Row(frame); r.Damage != nil || r.Err == nil {
		t.Errorf("its row: damage %v, err %v (want unread, not damaged)", r.Damage, r.Err)
	}
}
