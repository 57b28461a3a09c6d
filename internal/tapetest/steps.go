package tapetest

import (
	"crypto/rand"
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Steps is the shape of a tape WriteSteps writes: steps of a model call
// and, with FileSize, a file of that many random bytes, so that each
// step's frames lie between large blobs, as those of an agent that writes
// files do (the worst case for reading a tape by ranges).
type Steps struct {
	Argv  []string
	Steps int
	// Request is step i's request body (a call to gpt-4o-mini).
	Request func(i int) []byte
	// Responses adds an llm.response to each call (10 tokens in, 2 out),
	// its body ResponseBody(i) when that is set.
	Responses    bool
	ResponseBody func(i int) []byte
	// Output adds a line of output to each step.
	Output   bool
	FileSize int // 0: no file
}

// Written is what the last step of a tape WriteSteps wrote names.
type Written struct {
	Request, File tapefmt.Hash
}

// WriteSteps writes the tape s describes at path: run.start, the steps
// (each closed by a step.commit), run.end.
func WriteSteps(path string, s Steps) (last Written, err error) {
	err = tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: s.Argv})
		file := make([]byte, s.FileSize)
		for i := range s.Steps {
			var err error
			if last.Request, err = w.PutBlob("request", s.Request(i)); err != nil {
				return err
			}
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: last.Request, Model: "gpt-4o-mini"})
			if s.Responses {
				resp := tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: "gpt-4o-mini", Usage: tapefmt.Usage{Input: 10, Output: 2}}
				if s.ResponseBody != nil {
					if resp.Body, err = w.PutBlob("response", s.ResponseBody(i)); err != nil {
						return err
					}
				}
				w.Append(0, resp)
			}
			if s.Output {
				w.Append(0, tapefmt.Output{Fd: 1, Data: fmt.Appendf(nil, "step %d\n", i)})
			}
			if s.FileSize > 0 {
				rand.Read(file)
				if last.File, err = w.PutBlob("file", file); err != nil {
					return err
				}
				w.Append(0, tapefmt.FileChange{Path: fmt.Sprintf("data/%d.bin", i), Op: "write", Body: last.File})
			}
			if _, err := w.Commit(); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	return last, err
}
