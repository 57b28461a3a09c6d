package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// ErrStreamDir: a folder given as a booth child's standard stream. Its
// descriptor would be the host's folder, outside every read-only mount
// the booth makes: the child could write in it (/proc/self/fd/0/x) and
// climb from it (openat(0, "../..")) to the host's root.
var ErrStreamDir = errors.New("sandbox: a folder as a standard stream")

// CheckStreams refuses a folder as any of a booth child's standard
// streams (ErrStreamDir, naming the stream). Readers and writers that are
// not files pass.
func CheckStreams(stdin io.Reader, stdout, stderr io.Writer) error {
	for _, s := range []struct {
		name string
		v    any
	}{{"standard input", stdin}, {"standard output", stdout}, {"standard error", stderr}} {
		f, ok := s.v.(*os.File)
		if !ok || f == nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			name := ""
			if !strings.HasPrefix(f.Name(), "/dev/std") { // os.Stdin's name says nothing
				name = " " + termtext.Quote(f.Name())
			}
			return fmt.Errorf("%w: %s is a folder%s: the agent could write in it and climb from it to the host's root, past the booth's read-only mounts; give a file, a pipe or /dev/null",
				ErrStreamDir, s.name, name)
		}
	}
	return nil
}
