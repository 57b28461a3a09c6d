//go:build !jukebox_gcs && !jukebox_azure

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreDriverNotBuilt: in the default binary a gs:// or azblob://
// store is exit 2 before the agent starts, naming the build tag that
// brings the driver and the S3 way to the same store.
func TestStoreDriverNotBuilt(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "agent-ran")
	for url, words := range map[string][]string{
		"gs://tapes/team/":     {"jukebox_gcs", "storage.googleapis.com"},
		"azblob://tapes/team/": {"jukebox_azure", "S3-compatible gateway"},
	} {
		_, errs := wantCode(t, 2, "record", "-o", filepath.Join(dir, "run.jbx"), "--store", url, "--", "sh", "-c", "touch "+marker)
		_, lsErrs := wantCode(t, 2, "ls", url)
		for _, w := range words {
			if !strings.Contains(errs, w) || !strings.Contains(lsErrs, w) {
				t.Errorf("%s: want %q named:\nrecord: %s\nls: %s", url, w, errs, lsErrs)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("record --store %s started the agent", url)
		}
	}
}
