package export

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// JSON writes a whole tape as one JSON document, for tools that do not
// read .jbx: the tape (id, chain head, start), every frame with its
// payload as the tape holds it (FORMAT.md, section 10.3), and every blob a
// frame names, whole: as text when it is UTF-8, else in base64. It is
// written as it is read, so a long tape takes little memory beyond its
// blobs' hashes. docs/json.md shows the shape.
func JSON(w io.Writer, t *tapefmt.Tape, path string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	head := struct {
		Path    string `json:"path"`
		ID      string `json:"id"`
		Head    string `json:"head,omitempty"`
		Created string `json:"created"`
		Frames  int    `json:"frames"`
		Steps   int    `json:"steps"`
		Sealed  bool   `json:"sealed"`
		Torn    bool   `json:"torn"`
	}{Path: path, ID: fmt.Sprintf("%x", t.ID()), Created: t.Created().Format(time.RFC3339Nano),
		Frames: t.Len(), Steps: t.Steps(), Sealed: t.Sealed(), Torn: t.Recovered() != nil}
	if !head.Torn {
		head.Head = t.Head().String()
	}
	hb, err := json.Marshal(head)
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "{\"tape\":%s,\n\"frames\":[", hb)
	var refs []tapefmt.Hash
	seen := map[tapefmt.Hash]bool{}
	first := true
	for f, err := range t.All() {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p, err := f.Decode()
		if err != nil {
			return fmt.Errorf("%s: frame %d: %w", path, f.Seq, err)
		}
		for _, h := range tapefmt.BlobRefs(p) {
			if !h.IsZero() && !seen[h] {
				seen[h] = true
				refs = append(refs, h)
			}
		}
		fb, err := json.Marshal(struct {
			Seq     uint64          `json:"seq"`
			Kind    string          `json:"kind"`
			TimeNs  int64           `json:"time_ns"`
			Stream  uint32          `json:"stream"`
			Payload json.RawMessage `json:"payload"`
		}{f.Seq, f.Kind.String(), int64(f.Time), f.Stream, json.RawMessage(f.Payload)})
		if err != nil {
			return fmt.Errorf("%s: frame %d: %w", path, f.Seq, err)
		}
		if !first {
			bw.WriteString(",")
		}
		first = false
		bw.WriteString("\n")
		bw.Write(fb)
	}
	bw.WriteString("],\n\"blobs\":{")
	for i, h := range refs {
		data, err := t.Blob(h)
		if err != nil {
			return fmt.Errorf("%s: blob %s: %w", path, h, err)
		}
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n%q:{\"size\":%d", h.String(), len(data))
		writeBlobValue(bw, data)
		bw.WriteString("}")
	}
	bw.WriteString("}}\n")
	return bw.Flush()
}

// writeBlobValue writes data as the "text" key of a blob (UTF-8, as a
// JSON string) or its "base64" one, streamed piece by piece: a blob
// marshalled whole took 32 times its size (a 256 MiB blob of zeros, each
// \u0000 six bytes, made the export take 8 GB). Empty data has neither.
func writeBlobValue(w *bufio.Writer, data []byte) {
	if len(data) == 0 {
		return
	}
	if !utf8.Valid(data) {
		w.WriteString(`,"base64":"`)
		enc := base64.NewEncoder(base64.StdEncoding, w)
		enc.Write(data)
		enc.Close()
		w.WriteString(`"`)
		return
	}
	w.WriteString(`,"text":"`)
	const piece = 64 << 10
	for len(data) > 0 {
		n := min(piece, len(data))
		for n < len(data) && !utf8.RuneStart(data[n]) {
			n++ // never a character cut in two
		}
		q, _ := json.Marshal(string(data[:n])) // escaped as encoding/json escapes a string
		w.Write(q[1 : len(q)-1])
		data = data[n:]
	}
	w.WriteString(`"`)
}
