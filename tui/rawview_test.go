package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRawViewEscapes: the raw view shows what the readable view hides as
// ␛ or � with its escape (\x1b, \u200b, \xff), so the bytes can be read;
// nothing of it reaches the terminal as it is.
func TestRawViewEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctl.jbx")
	body := "red \x1b[31mtext\x1b[0m, zero\u200bwidth, bad \xff byte\nline two"
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		h, err := w.PutBlob("file", []byte(body))
		if err != nil {
			return err
		}
		w.Append(0, tapefmt.FileChange{Op: "write", Path: "notes\u200b.txt", Body: h, Size: int64(len(body))})
		_, err = w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 160, 40, path)
	press(d, keyRight)
	press(d, runes("r"))
	v := d.frame.View()
	for _, want := range []string{`red \x1b[31mtext\x1b[0m, zero\u200bwidth, bad \xff byte`, "line two", `notes\u200b.txt`} {
		if !strings.Contains(v, want) {
			t.Errorf("the raw view does not show %q:\n%s", want, v)
		}
	}
	if strings.ContainsAny(v, "\x1b\u200b�") {
		t.Errorf("the raw view shows a control or hidden character as it is, or as �:\n%q", v)
	}
}
