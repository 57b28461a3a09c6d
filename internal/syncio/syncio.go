// Package syncio holds what more than one goroutine writes at once: a
// command's output copied in by exec while its caller writes or reads it
// (the stages of a booth shell's pipeline, a test server's log).
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Writer is w written by one goroutine at a time.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter is w, locked.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Buffer is a bytes.Buffer written and read under a lock.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
