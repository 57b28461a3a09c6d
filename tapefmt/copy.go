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
