package tui

import (
	"context"
	"io"
	"sync"
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
	drawn := make(chan struct{})
	var once sync.Once
	out := writerFunc(func(p []byte) (int, error) { once.Do(func() { close(drawn) }); return len(p), nil })
	go func() {
		done <- Run([]string{"../testdata/tapes/agent-run.jbx"}, Options{Context: ctx}, in, out)
	}()
	select { // the turntable is up (it drew) before its context ends
	case <-drawn:
	case err := <-done:
		t.Fatalf("Run ended before drawing: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the turntable never drew")
	}
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

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
