package tapefmt

import (
	"errors"
	"os"
	"testing"
)

// TestNoSidecarForAURL: a file beside a tape named by a URL is refused,
// and no folder named after the URL appears.
func TestNoSidecarForAURL(t *testing.T) {
	t.Chdir(t.TempDir())
	err := WriteSidecarFile("s3://b/p/run.jbx.d/markers.json", []byte("{}"))
	if !errors.Is(err, ErrNoSidecar) {
		t.Errorf("WriteSidecarFile of a URL: %v", err)
	}
	if _, err := os.Stat("s3:"); err == nil {
		t.Error("a folder named after the URL was made")
	}
}
