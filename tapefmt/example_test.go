package tapefmt_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Example records one model call as a step, closes the tape, opens it again
// and walks its frames, reading the request body back from its blob.
func Example() {
	dir, err := os.MkdirTemp("", "tapefmt-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.jbx")

	// Write. A fixed clock makes the frame times reproducible.
	var clock time.Duration
	w, err := tapefmt.Create(path, tapefmt.Options{
		Now: func() time.Duration { clock += time.Millisecond; return clock },
	})
	if err != nil {
		log.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"python", "agent.py"}, Cwd: "/work", Mode: tapefmt.ModeRecord})
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	h, err := w.PutBlob("POST /v1/chat/completions", body) // before the frame that names it
	if err != nil {
		log.Fatal(err)
	}
	w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
		Body: h, Size: int64(len(body)), Model: "gpt-4o"})
	w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Usage: tapefmt.Usage{Input: 9, Output: 3}})
	w.Commit() // one whole step
	w.Append(0, tapefmt.RunEnd{ExitCode: 0})
	if err := w.Close(); err != nil { // Close reports any write that failed
		log.Fatal(err)
	}

	// Read.
	t, err := tapefmt.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	fmt.Printf("%d frames, %d step\n", t.Len(), t.Steps())
	for f, err := range t.Frames() {
		if err != nil {
			log.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			log.Fatal(err)
		}
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			b, err := t.Blob(p.Body)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%d %v %s %s %s\n", f.Seq, f.Kind, p.Method, p.Path, b)
		case *tapefmt.LLMResponse:
			fmt.Printf("%d %v %d, %d tokens\n", f.Seq, f.Kind, p.Status, p.Usage.Total())
		default:
			fmt.Printf("%d %v at %v\n", f.Seq, f.Kind, f.Time)
		}
	}
	// Output:
	// 5 frames, 1 step
	// 0 run.start at 1ms
	// 1 llm.request POST /v1/chat/completions {"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}
	// 2 llm.response 200, 12 tokens
	// 3 step.commit at 4ms
	// 4 run.end at 5ms
}
