package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ShowCmd prints the frames of a tape.
type ShowCmd struct {
	Tape  string   `arg:"" help:"Tape file (.jbx)." type:"existingfile"`
	Frame *int     `help:"Print only frame N, in full." placeholder:"N"`
	Kind  []string `help:"Print only frames of these kinds (dotted names such as llm.request; repeat or comma-separate)." placeholder:"KIND"`
	JSON  bool     `help:"Print one JSON object per frame and line: seq, kind, time (seconds), stream, offset, payload."`
	Blobs bool     `help:"Also print the blobs each frame names (request and response bodies, file contents), the first MiB of each."`
	Full  bool     `help:"With --blobs, print every blob whole, however large."`
}

// frameJSON is the --json shape of one frame.
type frameJSON struct {
	Seq     uint64            `json:"seq"`
	Kind    tapefmt.Kind      `json:"kind"`
	Time    float64           `json:"time"`
	Stream  uint32            `json:"stream"`
	Offset  int64             `json:"offset"`
	Payload json.RawMessage   `json:"payload"`
	Blobs   map[string]string `json:"blobs,omitempty"`
}

// Validate checks the kinds before the tape is opened.
func (c *ShowCmd) Validate() error {
	for _, k := range c.Kind {
		if _, err := tapefmt.ParseKind(k); err != nil {
			return fmt.Errorf("--kind: %w", err)
		}
	}
	return nil
}

// Run prints the frames.
func (c *ShowCmd) Run(env *Env) error {
	t, err := tapefmt.Open(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	if rec := t.Recovered(); rec != nil && !c.JSON {
		fmt.Fprintf(env.Stderr, "warning: %s\n", recoveryText(rec))
	}
	if c.Frame != nil {
		f, err := t.Frame(*c.Frame)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("--frame %d: %w", *c.Frame, err))
		}
		return c.print(env.Stdout, t, f, true)
	}
	var kinds []tapefmt.Kind
	for _, k := range c.Kind {
		kk, _ := tapefmt.ParseKind(k)
		kinds = append(kinds, kk)
	}
	for f, err := range t.Frames(kinds...) {
		if err != nil {
			return err
		}
		if err := c.print(env.Stdout, t, f, false); err != nil {
			return err
		}
	}
	return nil
}

func (c *ShowCmd) print(w io.Writer, t *tapefmt.Tape, f tapefmt.Frame, full bool) error {
	p, err := f.Decode()
	if err != nil {
		return err
	}
	blobs, err := c.blobs(t, p)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(w).Encode(frameJSON{Seq: f.Seq, Kind: f.Kind, Time: f.Time.Seconds(),
			Stream: f.Stream, Offset: f.Offset, Payload: f.Payload, Blobs: blobs})
	}
	// Text from a tape is sanitized before it reaches a terminal; --json
	// prints it escaped and whole.
	fmt.Fprintf(w, "%6d  %s  s%-2d %-13s %s\n", f.Seq, engine.Clock(f.Time), f.Stream, f.Kind, engine.OneLine(engine.Describe(p), 0))
	if full {
		var pretty json.RawMessage = f.Payload
		out, _ := json.MarshalIndent(pretty, "  ", "  ")
		fmt.Fprintf(w, "  offset %d, %d payload bytes\n  %s\n", f.Offset, len(f.Payload), out)
	}
	for _, h := range slices.Sorted(maps.Keys(blobs)) {
		fmt.Fprintf(w, "  blob %s:\n%s\n", h[:12], engine.Sanitize(blobs[h]))
	}
	return nil
}

// blobs returns the blobs a payload names, as text (or a note for binary).
func (c *ShowCmd) blobs(t *tapefmt.Tape, p tapefmt.Payload) (map[string]string, error) {
	if !c.Blobs {
		return nil, nil
	}
	out := map[string]string{}
	for _, h := range tapefmt.BlobRefs(p) {
		b, err := t.Blob(h)
		if err != nil {
			return nil, err
		}
		out[h.String()] = blobText(b, c.Full)
	}
	return out, nil
}

// maxBlobShown is how much of one blob show prints unless --full.
const maxBlobShown = 1 << 20

// blobText is a blob as show prints it: text, cut at a rune boundary near
// maxBlobShown bytes unless full, or a note for binary data.
func blobText(b []byte, full bool) string {
	cut := b
	if !full && len(b) > maxBlobShown {
		cut = b[:maxBlobShown]
		for len(cut) > 0 && !utf8.RuneStart(b[len(cut)]) {
			cut = cut[:len(cut)-1]
		}
	}
	switch {
	case !utf8.Valid(cut):
		return fmt.Sprintf("(%d bytes of binary data)", len(b))
	case len(cut) < len(b):
		return fmt.Sprintf("%s\n… (%d more bytes; --full prints them)", cut, len(b)-len(cut))
	}
	return string(b)
}

func recoveryText(r *tapefmt.Recovery) string {
	return fmt.Sprintf("tape has no footer (not closed): kept %d frames up to the last whole step, dropped %d frames and %d bytes (%s)",
		r.FramesKept, r.FramesDropped, r.BytesDropped(), r.Reason)
}
