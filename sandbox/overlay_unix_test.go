//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestIsOpaque: a directory is opaque when it carries overlayfs's opaque
// attribute set to "y", whatever other extended attributes it has, also
// when their names are too many for isOpaque's first look (then it asks
// for the attribute itself).
func TestIsOpaque(t *testing.T) {
	root := t.TempDir()
	set := func(dir, name, value string) {
		t.Helper()
		if err := unix.Lsetxattr(dir, name, []byte(value), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) {
				testenv.Unavailable(t, "user extended attributes in the temporary folder", "set TMPDIR to a file system that has them")
			}
			t.Fatal(err)
		}
	}
	many := func(dir string) { // names of over 512 bytes in all
		for i := range 12 {
			set(dir, fmt.Sprintf("user.%s-%d", strings.Repeat("n", 50), i), "v")
		}
	}
	for _, c := range []struct {
		name   string
		attrs  func(dir string)
		opaque bool
	}{
		{"none", func(string) {}, false},
		{"opaque", func(d string) { set(d, xattrOpaque, "y") }, true},
		{"not y", func(d string) { set(d, xattrOpaque, "n") }, false},
		{"others", func(d string) { set(d, "user.note", "y") }, false},
		{"others and opaque", func(d string) { set(d, "user.note", "x"); set(d, xattrOpaque, "y") }, true},
		{"many", many, false},
		{"many and opaque", func(d string) { many(d); set(d, xattrOpaque, "y") }, true},
	} {
		dir := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c.attrs(dir)
		if got := isOpaque(dir); got != c.opaque {
			t.Errorf("%s: isOpaque %v, want %v", c.name, got, c.opaque)
		}
	}
}
