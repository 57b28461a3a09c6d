package tapefmt_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// recorder is an Observer that keeps what it saw, in order.
type recorder struct {
	id      [16]byte
	created time.Time
	seen    []string
}

func (r *recorder) ObserveStart(id [16]byte, created time.Time) { r.id, r.created = id, created }
func (r *recorder) ObserveBlob(lane string, h tapefmt.Hash, data []byte) {
	r.seen = append(r.seen, "blob "+lane+" "+string(data))
}
func (r *recorder) ObserveFrame(f tapefmt.Frame) { r.seen = append(r.seen, "frame "+f.Kind.String()) }

// TestObserver: an observer sees the tape's id and start, each blob (a
// blob stored already too) before the frame that names it, and every
// frame in order, step frames included; what a masked tape keeps, not
// what it was given.
func TestObserver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.jbx")
	var r recorder
	w, err := tapefmt.Create(path, tapefmt.Options{Observer: &r, Filter: hideSK{}})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	for range 2 {
		h, err := w.PutBlob("openai /v1/chat/completions request", []byte(`{"key":"sk-secret"}`))
		if err != nil {
			t.Fatal(err)
		}
		w.Append(0, tapefmt.LLMRequest{Provider: "openai", Body: h})
	}
	w.Commit()
	w.Append(0, tapefmt.RunEnd{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if r.id != tp.ID() || !r.created.Equal(tp.Created()) {
		t.Errorf("start: id %x created %v, the tape says %x %v", r.id, r.created, tp.ID(), tp.Created())
	}
	want := []string{"frame run.start",
		"blob openai /v1/chat/completions request {\"key\":\"**-******\"}", "frame llm.request",
		"blob openai /v1/chat/completions request {\"key\":\"**-******\"}", "frame llm.request",
		"frame step.commit", "frame run.end"}
	if len(r.seen) != len(want) {
		t.Fatalf("saw %q, want %q", r.seen, want)
	}
	for i := range want {
		if r.seen[i] != want[i] {
			t.Errorf("%d: saw %q, want %q", i, r.seen[i], want[i])
		}
	}
}

// hideSK is a filter that turns "sk-secret" into "**-******".
type hideSK struct{}

func (hideSK) Payload(p tapefmt.Payload) tapefmt.Payload { return p }
func (hideSK) Blob(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte("sk-secret"), []byte("**-******"))
}
func (f hideSK) Stream(b []byte, c tapefmt.Chunks) ([]byte, tapefmt.Chunks) { return f.Blob(b), c }
