package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// ShowCmd prints the frames of a tape.
type ShowCmd struct {
	Tape  string                         `arg:"" help:"Tape file (.jbx), or a tape in a store (s3://BUCKET/PREFIX/NAME.jbx)." type:"tape"`
	Frame *int                           `help:"Print only frame N, in full." placeholder:"N"`
	Kind  []string                       `help:"Print only frames of these kinds (dotted names such as llm.request; repeat or comma-separate)." placeholder:"KIND"`
	JSON  bool                           `help:"Print one JSON object per frame and line: seq, kind, time (seconds), stream, offset, payload."`
	Blobs bool                           `help:"Also print the blobs each frame names (request and response bodies, file contents), the first MiB of each."`
	Full  bool                           `help:"With --blobs, print every blob whole, however large."`
	reqs  map[uint64]*tapefmt.LLMRequest // the requests printed so far, by call
	read  bool                           // reqs holds every request of the tape
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
	Error   string            `json:"error,omitempty"` // the payload or a blob does not decode
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

// Run prints the frames. Its errors and warnings name the tape (they
// said "frame 0: tapefmt: ..." alone).
func (c *ShowCmd) Run(env *Env) error {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	if err := c.run(env, t); err != nil && !strings.Contains(err.Error(), c.Tape) {
		return fmt.Errorf("%s: %w", c.Tape, err)
	} else if err != nil {
		return err
	}
	return nil
}

func (c *ShowCmd) run(env *Env, t *tapefmt.Tape) error {
	if rec := t.Recovered(); rec != nil {
		// On stderr with --json too: the frames printed are not all the
		// tape held, and nothing in them says so.
		fmt.Fprintf(env.Stderr, "warning: %s: %s\n", c.Tape, recoveryText(rec))
	}
	if c.Frame != nil {
		f, rerr := t.Frame(*c.Frame)
		f, ok := recordUnread(t, *c.Frame, f, rerr)
		if !ok {
			return withCode(ExitUsage, fmt.Errorf("--frame %d: %w", *c.Frame, rerr))
		}
		return c.print(env.Stdout, t, f, true, rerr)
	}
	var kinds []tapefmt.Kind
	for _, k := range c.Kind {
		kk, _ := tapefmt.ParseKind(k)
		kinds = append(kinds, kk)
	}
	for _, err := range t.Frames(0) { // loads the frame index: KindAt reads memory
		if err != nil {
			return err
		}
	}
	var bad []error
	for i := range t.Len() {
		k, _, err := t.KindAt(i)
		if err != nil {
			return errors.Join(append(bad, err)...)
		}
		if len(kinds) > 0 && !slices.Contains(kinds, k) {
			continue
		}
		f, rerr := t.Frame(i)
		f, ok := recordUnread(t, i, f, rerr)
		if !ok {
			return errors.Join(append(bad, rerr)...)
		}
		if err := c.print(env.Stdout, t, f, false, rerr); err != nil {
			var ue *unreadableFrame
			if !errors.As(err, &ue) {
				return err
			}
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		if len(bad) == 1 {
			return bad[0]
		}
		return withCode(ExitBadTape, fmt.Errorf("%d frames do not read, the first: %w", len(bad), bad[0]))
	}
	return nil
}

// unreadableFrame is a frame whose payload or a blob it names does not
// decode. show prints the frame with the error, goes on with the next
// frames and exits 3.
type unreadableFrame struct {
	seq uint64
	err error
}

// Error names the frame and the cause.
func (e *unreadableFrame) Error() string { return fmt.Sprintf("frame %d: %v", e.seq, e.err) }

// Unwrap returns the cause (a *tapefmt.FormatError, say).
func (e *unreadableFrame) Unwrap() error { return e.err }

// recordUnread is what show prints of frame i, read as f with err: f
// when it read, or, when its own record does not read (a flipped byte:
// its checksum, its header), a stand-in from the index with no payload,
// printed with the error as a frame whose payload does not decode is.
// false for any other error (an index that does not read, a frame out of
// range, a read that failed).
func recordUnread(t *tapefmt.Tape, i int, f tapefmt.Frame, err error) (tapefmt.Frame, bool) {
	var fe *tapefmt.FormatError
	switch {
	case err == nil:
		return f, true
	case !errors.As(err, &fe) || fe.Frame != int64(i):
		return f, false
	}
	k, at, kerr := t.KindAt(i)
	if kerr != nil {
		return f, false
	}
	return tapefmt.Frame{Seq: uint64(i), Kind: k, Time: at, Stream: f.Stream, Offset: fe.Offset}, true
}

// print prints frame f; rerr, when its record did not read
// (recordUnread), is its error.
func (c *ShowCmd) print(w io.Writer, t *tapefmt.Tape, f tapefmt.Frame, full bool, rerr error) error {
	var p tapefmt.Payload
	perr := rerr
	if perr == nil {
		p, perr = f.Decode()
	}
	var blobs map[string]string
	var berr error
	if perr == nil {
		blobs, berr = c.blobs(t, p)
	}
	bad := cmp.Or(perr, berr)
	if c.JSON {
		fj := frameJSON{Seq: f.Seq, Kind: f.Kind, Time: f.Time.Seconds(),
			Stream: f.Stream, Offset: f.Offset, Payload: f.Payload, Blobs: blobs}
		if bad != nil {
			fj.Error = bad.Error()
		}
		if err := json.NewEncoder(w).Encode(fj); err != nil {
			return err
		}
	} else {
		c.printText(w, f, p, blobs, bad, full, c.usage(t, p))
	}
	if bad != nil {
		return withCode(ExitBadTape, &unreadableFrame{seq: f.Seq, err: bad})
	}
	return nil
}

// printText is the terminal form of a frame. Text from a tape is sanitized
// before it reaches a terminal; --json prints it escaped and whole.
func (c *ShowCmd) printText(w io.Writer, f tapefmt.Frame, p tapefmt.Payload, blobs map[string]string, bad error, full bool, usage string) {
	line := "UNREADABLE"
	if p != nil {
		line = timeline.OneLine(timeline.Describe(p), 0) + usage
	}
	fmt.Fprintf(w, "%6d  %s  s%-2d %-13s %s\n", f.Seq, timeline.Clock(f.Time), f.Stream, f.Kind, line)
	if full {
		var pretty json.RawMessage = f.Payload
		out, err := json.MarshalIndent(pretty, "  ", "  ")
		if err != nil {
			out = []byte(termtext.Sanitize(string(f.Payload)))
		}
		fmt.Fprintf(w, "  offset %d, %d payload bytes\n  %s\n", f.Offset, len(f.Payload), out)
	}
	for _, h := range slices.Sorted(maps.Keys(blobs)) {
		fmt.Fprintf(w, "  blob %s:\n%s\n", h[:12], termtext.Sanitize(blobs[h]))
	}
	if bad != nil {
		fmt.Fprintf(w, "  ERROR at frame %d (offset %d): %s\n", f.Seq, f.Offset, timeline.OneLine(bad.Error(), 0))
	}
}

// usage is what a response frame used, as every view finds it
// (llmwire.ResponseUsage, from its body or, when the answer reported
// none, counted and marked "~"), for its line: its cost when it holds its
// usage (its line shows the tokens), else the tokens and cost; "" for
// other frames. It keeps the requests it passes, which the counting reads.
func (c *ShowCmd) usage(t *tapefmt.Tape, p tapefmt.Payload) string {
	switch p := p.(type) {
	case *tapefmt.LLMRequest:
		if c.reqs == nil {
			c.reqs = map[uint64]*tapefmt.LLMRequest{}
		}
		c.reqs[p.Call] = p
	case *tapefmt.LLMResponse:
		if p.Error != "" {
			return ""
		}
		if p.Usage.Total() > 0 { // the frame's line has its tokens: the cost, as cost prices them
			u := llmwire.ResponseUsage(p, t.Blob, func() llmwire.Call { return llmwire.RequestCall(c.request(t, p.Call), t.Blob) })
			if u.Priced {
				return " " + timeline.USD(u.Cost)
			}
			return ""
		}
		req := c.request(t, p.Call)
		u := llmwire.ResponseUsage(p, t.Blob, func() llmwire.Call { return llmwire.RequestCall(req, t.Blob) })
		if u.Usage.Total() == 0 {
			return ""
		}
		if u.Estimated && req == nil { // its request is not on the tape (cut off): the input is not counted
			return fmt.Sprintf(" ?→~%d tok (no usage reported: counted)", u.Usage.Output)
		}
		s := fmt.Sprintf(" %s%d→%s%d tok", u.Mark(), u.Usage.Input, u.Mark(), u.Usage.Output)
		if u.Priced {
			s += " " + u.Mark() + timeline.USD(u.Cost)
		}
		if u.Estimated {
			s += " (no usage reported: counted)"
		}
		return s
	}
	return ""
}

// request is a call's request: the one printed, else, where it was not
// (--kind, --frame), read from the tape, every request at once, so that
// a response is counted and priced alike whatever show prints. Nil when
// the tape does not hold it.
func (c *ShowCmd) request(t *tapefmt.Tape, call uint64) *tapefmt.LLMRequest {
	if r := c.reqs[call]; r != nil || c.read {
		return r
	}
	c.read = true
	if c.reqs == nil {
		c.reqs = map[uint64]*tapefmt.LLMRequest{}
	}
	for f, err := range t.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			break // the requests before it are kept: show says what does not read
		}
		if p, err := f.Decode(); err == nil {
			if r, ok := p.(*tapefmt.LLMRequest); ok && c.reqs[r.Call] == nil {
				c.reqs[r.Call] = r
			}
		}
	}
	return c.reqs[call]
}

// blobs returns the blobs a payload names, as text (or a note for binary).
// A blob that does not read ends the list with its error.
func (c *ShowCmd) blobs(t *tapefmt.Tape, p tapefmt.Payload) (map[string]string, error) {
	if !c.Blobs {
		return nil, nil
	}
	out := map[string]string{}
	for _, h := range tapefmt.BlobRefs(p) {
		b, err := t.Blob(h)
		if err != nil {
			return out, fmt.Errorf("blob %s: %w", h.Short(), err)
		}
		// A compressed HTTP body is shown decoded, and says so.
		d := llmwire.PayloadBody(p, b)
		text := blobText(d.Text, c.Full)
		if n := d.Note(); n != "" && !c.JSON {
			text = fmt.Sprintf("(%s: %d bytes stored, %d decoded)\n%s", n, len(b), len(d.Text), text)
		}
		out[h.String()] = text
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
	why := "not closed"
	if r.Damaged {
		// Bytes that are no record where the footer or a frame should be:
		// not what a killed recording leaves.
		why = "damaged: after its last record come bytes that are no record and no footer that reads, which a recording that was not closed does not leave"
	}
	return fmt.Sprintf("tape has no footer (%s): kept %d frames up to the last whole step, dropped %d frames and %d bytes (%s)",
		why, r.FramesKept, r.FramesDropped, r.BytesDropped(), r.Reason)
}
