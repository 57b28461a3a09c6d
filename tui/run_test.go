package tui

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// TestRunEndsWithItsContext: main's context, cancelled by SIGINT or
// SIGTERM, ends the turntable (and with it its forks and background
// work) as q does: no error.
func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	in, inW := io.Pipe() // no keys ever come
	defer inW.Close()
	done := make(chan error, 1)
	go func() {
		done <- Run([]string{"../testdata/tapes/agent-run.jbx"}, Options{Context: ctx}, in, &bytes.Buffer{})
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turntable did not end with its context")
	}
}
