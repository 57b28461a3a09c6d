package nsinit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	for i := range sharedTmpPerFolder + 10 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// More folders two deep in it than the walk looks at.
	for i := range 50 {
		for j := range sharedTmpFolders / 50 {
			if err := os.MkdirAll(filepath.Join(big, fmt.Sprintf("d%d", i), fmt.Sprint(j)), 0o755); err != nil {
				t.Fatal(err)
			}
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

// TestSharedTmpFilesDoNotHide: a shared folder three deep is found beside
// folders that hold many files (run folders, scratch files of builds and
// tests): the walk's budget counted every entry, so 12,000 files in 20
// folders of /tmp hid it (TestHostTmpSharedAsUser failed so, on a
// machine whose /tmp held clones and leftovers), and the agent got
// EOVERFLOW making a file there in the booth.
func TestSharedTmpFilesDoNotHide(t *testing.T) {
	root := t.TempDir()
	for i := range 20 {
		dir := filepath.Join(root, fmt.Sprintf("a-run-%02d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 600 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	deeper := filepath.Join(root, "z-host", "open", "deeper")
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(deeper, 0o777); err != nil {
		t.Fatal(err)
	}
	other := os.Getuid() + 1
	var got []string
	for _, f := range SharedTmp(root, other, other) {
		got = append(got, f.Path)
	}
	if !slices.Contains(got, "z-host/open/deeper") {
		t.Errorf("SharedTmp left out z-host/open/deeper: %q", got)
	}
}
