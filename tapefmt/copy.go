package tapefmt

import (
	"errors"
	"fmt"
	"os"
)

// CopyFrame appends frame f of src to w with the blobs it names, which are
// stored again on w (deltas are made anew there). A step frame is written
// anew so that it carries w's chain. Frame and blobs are copied as they
// are (never masked again: the frame names its blobs by their hash).
func CopyFrame(w *Writer, src *Tape, f Frame) error {
	p, err := f.Decode()
	if err != nil {
		return err
	}
	for _, h := range BlobRefs(p) {
		b, err := src.Blob(h)
		if err != nil {
			return fmt.Errorf("frame %d: %w", f.Seq, err)
		}
		if _, err := w.putBlob("copy "+f.Kind.String(), b); err != nil {
			return err
		}
	}
	_, err = w.AppendFrame(f)
	return err
}

// Rewrite writes every frame src holds (for a torn tape, those up to its
// last whole step) to a new, closed tape at path, blobs included, with
// src's created time and id (the same run). What src keeps is verified
// first (its step frames' chain values, its blobs): a new tape chains
// its frames anew, and would vouch for frames changed after they were
// written. On failure nothing is left at path.
func Rewrite(src *Tape, path string) (frames int, err error) {
	if _, err := src.Verify(VerifyOptions{Blobs: true}); err != nil {
		return 0, fmt.Errorf("%w: nothing written (a new tape would chain the frames anew and vouch for them)", err)
	}
	err = CreateWith(path, Options{Created: src.Created(), ID: src.ID()}, func(w *Writer) error {
		for i := range src.Len() {
			f, err := src.Frame(i)
			if err == nil {
				err = CopyFrame(w, src, f)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return src.Len(), nil
}

// CreateWith creates a tape at path, lets write fill it, closes it and reads
// it back (ReadBack). When write, the close or the read-back fails,
// the file is removed, so a tape that exists at path is always a whole one
// that reads.
func CreateWith(path string, opts Options, write func(*Writer) error) error {
	w, err := Create(path, opts)
	if err != nil {
		return err
	}
	err = errors.Join(write(w), w.Close())
	if err == nil {
		err = ReadBack(path, nil)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
