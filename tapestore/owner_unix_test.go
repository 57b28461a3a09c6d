//go:build unix

package tapestore

import (
	"os"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestCacheOfAnotherUser: a cache folder another user made (one shared
// JUKEBOX_CACHE_DIR) failed at its first file with "open tape: open
// s3://...: permission denied", as if the store had refused. It is named,
// with what to do, before anything is read.
func TestCacheOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Unavailable(t, "a folder of another user's", "run as root, which can give one to nobody")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JUKEBOX_CACHE_DIR", dir)
	// root's own test: the folder is nobody's, root is "another user"
	if _, err := CacheDir(); err == nil || !strings.Contains(err.Error(), "belongs to another user") || !strings.Contains(err.Error(), "--no-cache") {
		t.Errorf("CacheDir of nobody's folder: %v", err)
	}
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	if _, err := CacheDir(); err != nil {
		t.Errorf("CacheDir of one's own folder: %v", err)
	}
}
