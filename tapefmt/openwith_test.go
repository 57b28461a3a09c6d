package tapefmt

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
)

// TestOpenWithTakesTheOpener: a store's tape opens by the reader its
// caller passes in (OpenWith), and only by it: tapefmt holds no opener of
// its own, so Open of the same URL looks for a file.
func TestOpenWithTakesTheOpener(t *testing.T) {
	b, err := os.ReadFile("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	const url = "fake://store/run.jbx"
	var asked []string
	remote := func(name string) (io.ReaderAt, int64, io.Closer, bool, error) {
		asked = append(asked, name)
		return bytes.NewReader(b), int64(len(b)), io.NopCloser(nil), true, nil
	}
	tp, err := OpenWith(url, remote)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Len() == 0 || len(asked) != 1 || asked[0] != url {
		t.Errorf("OpenWith: %d frames, opener asked %q", tp.Len(), asked)
	}
	tp.Close()
	if _, err := Open(url); !errors.Is(err, os.ErrNotExist) || len(asked) != 1 {
		t.Errorf("Open of a URL: %v (opener asked %d times), want no such file and no opener", err, len(asked))
	}
	if tp, err := OpenWith("../testdata/tapes/agent-run.jbx", remote); err != nil || len(asked) != 1 {
		t.Errorf("OpenWith of a path: %v (opener asked %d times), want the file", err, len(asked))
	} else {
		tp.Close()
	}
	// A remote tape must be whole: one cut short is said to be.
	cut := func(string) (io.ReaderAt, int64, io.Closer, bool, error) {
		return bytes.NewReader(b[:len(b)/2]), int64(len(b) / 2), io.NopCloser(nil), true, nil
	}
	if _, err := OpenWith(url, cut); !errors.Is(err, ErrNoFooter) {
		t.Errorf("OpenWith of half a tape: %v, want ErrNoFooter", err)
	}
}
