package tapefmt

import "fmt"

// CopyFrame appends frame f of src to w with the blobs it names, which are
// stored again on w (deltas are made anew there). A step frame is written
// anew so that it carries w's chain.
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
		if _, err := w.PutBlob("copy "+f.Kind.String(), b); err != nil {
			return err
		}
	}
	_, err = w.AppendFrame(f)
	return err
}

// Rewrite writes every frame src holds (for a torn tape, those up to its
// last whole step) to a new, closed tape at path, blobs included.
func Rewrite(src *Tape, path string) (frames int, err error) {
	w, err := Create(path, Options{Created: src.Created(), Sync: SyncNever})
	if err != nil {
		return 0, err
	}
	for i := range src.Len() {
		f, ferr := src.Frame(i)
		if ferr == nil {
			ferr = CopyFrame(w, src, f)
		}
		if ferr != nil {
			w.Close()
			return i, ferr
		}
	}
	return src.Len(), w.Close()
}
