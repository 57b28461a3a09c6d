package jukeboxtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine/jukeboxtest"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ask is a Go agent's model call: the answer's text, read from the SSE
// events one by one when stream is set.
func ask(c *http.Client, prompt string, stream bool) (string, error) {
	body, _ := json.Marshal(map[string]any{"model": "demo-small", "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-secret-of-the-test")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	if !stream {
		var v struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Choices) == 0 {
			return "", fmt.Errorf("answer: %v", err)
		}
		return v.Choices[0].Message.Content, nil
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return "", err
		}
		for _, ch := range ev.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return text.String(), sc.Err()
}

// TestRecorderRoundTrip is issue 34's RoundTripper: a Go agent's calls,
// one streamed, recorded against the scripted model through the
// Recorder, make a tape that verifies whole (hash chain, blobs), holds no
// key, keeps the stream's chunks, and replays with the model gone; an
// agent that asks something else fails its test with the divergence.
func TestRecorderRoundTrip(t *testing.T) {
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "agent.jbx")
	rec, err := jukeboxtest.Open(tape, jukeboxtest.RecordMode(jukeboxtest.ModeOnce), jukeboxtest.Route("api.openai.com", srv.URL()))
	if err != nil || !rec.Recording() {
		t.Fatalf("open: %v (recording %v)", err, rec != nil && rec.Recording())
	}
	plain, err := ask(rec.Client(), "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := ask(rec.Client(), "hello again", true)
	if err != nil || streamed == "" {
		t.Fatalf("stream: %q, %v", streamed, err)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	tapetest.Verify(t, tape)
	tapetest.NoSecrets(t, tape, "sk-secret-of-the-test")
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []int
	for f, err := range tp.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		chunks = append(chunks, len(p.(*tapefmt.LLMResponse).Chunks))
	}
	tp.Close()
	if len(chunks) != 2 || chunks[1] < 2 {
		t.Fatalf("want two responses, the second streamed in chunks; chunks per response: %v", chunks)
	}

	// Replayed: the same answers, with the model gone (once: the tape is there).
	t.Run("replay", func(t *testing.T) {
		r := jukeboxtest.NewRecorder(t, tape)
		if r.Recording() {
			t.Fatal("once with the tape there records")
		}
		p, err := ask(r.Client(), "hello", false)
		if err != nil || p != plain {
			t.Fatalf("replayed %q, %v; recorded %q", p, err, plain)
		}
		s, err := ask(r.Client(), "hello again", true)
		if err != nil || s != streamed {
			t.Fatalf("replayed stream %q, %v; recorded %q", s, err, streamed)
		}
	})
	// An agent that asks otherwise: its test fails with the divergence.
	f := &recorder{T: t}
	r := jukeboxtest.NewRecorder(f, tape, jukeboxtest.RecordMode(jukeboxtest.ModeNone))
	if _, err := ask(r.Client(), "goodbye", false); err == nil {
		t.Fatal("a request the tape does not hold was answered")
	}
	res, err := r.Close()
	if err != nil || res.Divergence == nil || !strings.Contains(res.Divergence.Error(), "messages.0.content") {
		t.Fatalf("divergence: %+v, %v", res, err)
	}
	if why := res.NotReproduced(); !strings.Contains(why, "diverged") || !strings.Contains(why, "never asked for") {
		t.Fatalf("not reproduced: %q", why)
	}
	// Mode none without a tape, and an unknown mode, are errors naming them.
	if _, err := jukeboxtest.Open(filepath.Join(t.TempDir(), "none.jbx"), jukeboxtest.RecordMode("none")); err == nil || !strings.Contains(err.Error(), "none.jbx") {
		t.Fatalf("mode none, no tape: %v", err)
	}
	if _, err := jukeboxtest.Open(tape, jukeboxtest.RecordMode("sometimes")); err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("unknown mode: %v", err)
	}
}

// TestRecorderKeepsNoFailedRecording: a test that fails while recording
// leaves no tape, so that the next run records again.
func TestRecorderKeepsNoFailedRecording(t *testing.T) {
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tape := filepath.Join(t.TempDir(), "failed.jbx")
	t.Run("inner", func(t *testing.T) {
		f := &recorder{T: t}
		r := jukeboxtest.NewRecorder(f, tape, jukeboxtest.RecordMode("all"), jukeboxtest.Route("api.openai.com", srv.URL()))
		if _, err := ask(r.Client(), "hello", false); err != nil {
			t.Fatal(err)
		}
		f.Errorf("the agent's answer was wrong")
	})
	if _, err := os.Stat(tape); err == nil {
		t.Fatal("a failed test's recording was kept")
	}
	if _, err := os.Stat(tape + ".recording"); err == nil {
		t.Fatal("a failed test's partial recording was left")
	}
}

// recorder's Failed reports what it kept.
func (r *recorder) Failed() bool { return r.failed }

// ExampleOpen records a Go agent's model call through a Recorder (here
// against a scripted model standing in for api.openai.com), then replays
// it with the model gone. In a test, NewRecorder(t, "NAME.jbx") does the
// same with a tape in testdata/tapes/, recording on the first run.
func ExampleOpen() {
	model, _, _ := llmsim.Start("127.0.0.1:0", nil)
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	tape := filepath.Join(dir, "hello.jbx")

	rec, _ := jukeboxtest.Open(tape, jukeboxtest.RecordMode(jukeboxtest.ModeAll), jukeboxtest.Route("api.openai.com", model.URL()))
	recorded, _ := ask(rec.Client(), "hello", false)
	rec.Close()
	model.Close()

	rep, _ := jukeboxtest.Open(tape, jukeboxtest.RecordMode(jukeboxtest.ModeNone))
	replayed, _ := ask(rep.Client(), "hello", false)
	res, _ := rep.Close()
	fmt.Println(rec.Recording(), rep.Recording(), replayed == recorded, res.NotReproduced() == "")
	// Output: true false true true
}
