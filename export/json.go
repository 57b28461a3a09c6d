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
		b := struct {
			Size   int    `json:"size"`
			Text   string `json:"text,omitempty"`
			Base64 string `json:"base64,omitempty"`
		}{Size: len(data)}
		if utf8.Valid(data) {
			b.Text = string(data)
		} else {
			b.Base64 = base64.StdEncoding.EncodeToString(data)
		}
		bb, err := json.Marshal(b)
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n%q:%s", h.String(), bb)
	}
	bw.WriteString("}}\n")
	return bw.Flush()
}
