package nsinit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSharedTmpBreadthFirst: a folder right in /tmp that the booth's user
// may write in is found however large a tree before it in the listing (a
// module cache kept under /tmp took the whole budget of a depth-first
// walk, and a file made in the folder failed in the booth with EOVERFLOW).
func TestSharedTmpBreadthFirst(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "a-big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range sharedTmpEntries + 10 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "z-shared", "inner"), 0o777); err != nil {
		t.Fatal(err)
	}
	// The caller is another user than the folders' owner, who may write
	// in them (this process may).
	other := os.Getuid() + 1
	got := map[string]bool{}
	for _, f := range SharedTmp(root, other, other) {
		got[f.Path] = true
	}
	for _, want := range []string{"a-big", "z-shared"} {
		if !got[want] {
			t.Errorf("SharedTmp left out %s: %v", want, got)
		}
	}
}
