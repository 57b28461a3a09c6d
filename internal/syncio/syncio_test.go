package syncio

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writers at once lose nothing, and the race
// detector sees no race (the point of the package).
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	w := NewWriter(&b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				w.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes written, want 800", len(got))
	}
}
