package tapefmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// VerifyOptions choose how deep Verify looks.
type VerifyOptions struct {
	// Blobs decodes every blob and checks it against its hash, and checks
	// that every blob a frame names is on the tape. Without it only CRCs,
	// the hash chain and the index are checked.
	Blobs bool
	// Key, when set, also checks the seal.
	Key []byte
}

// VerifyReport is what Verify checked.
type VerifyReport struct {
	Frames   int
	Blobs    int
	Steps    int
	Head     Hash
	Sealed   bool
	SealOK   bool      // the seal matched the key (only with a key)
	Recovery *Recovery // set when the tape has no footer

	lastStep uint64 // first frame after the last step boundary checked
}

// blobReferrer is a payload that names blobs.
type blobReferrer interface{ blobRefs() []Hash }

func (p LLMRequest) blobRefs() []Hash   { return []Hash{p.Body} }
func (p LLMResponse) blobRefs() []Hash  { return []Hash{p.Body} }
func (p ToolResult) blobRefs() []Hash   { return []Hash{p.Body} }
func (p MCPMessage) blobRefs() []Hash   { return []Hash{p.Body} }
func (p FileChange) blobRefs() []Hash   { return []Hash{p.Body, p.Before} }
func (p HTTPRequest) blobRefs() []Hash  { return []Hash{p.Body} }
func (p HTTPResponse) blobRefs() []Hash { return []Hash{p.Body} }
func (p NetConn) blobRefs() []Hash      { return []Hash{p.Up, p.Down} }
func (p Control) blobRefs() []Hash      { return []Hash{p.RequestBody, p.AnswerBody, p.File} }
func (p Snapshot) blobRefs() []Hash {
	hs := make([]Hash, len(p.Files))
	for i, f := range p.Files {
		hs[i] = f.Body
	}
	return hs
}

// Verify recomputes every CRC, the hash chain and the index and, as the
// options ask, every blob hash and the seal. The error is the first problem
// found, a *FormatError naming its offset and frame, or ErrSeal.
func (t *Tape) Verify(opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{Recovery: t.rec, Sealed: t.Sealed()}
	if err := t.verifyRecords(rep, opts.Blobs); err != nil {
		return rep, err
	}
	if opts.Blobs {
		if err := t.verifyBlobs(); err != nil {
			return rep, err
		}
	}
	if opts.Key != nil {
		if err := t.CheckSeal(opts.Key); err != nil {
			return rep, err
		}
		rep.SealOK = true
	}
	return rep, nil
}

// ReadBack opens the tape at path as a reader would and checks what a
// writer could still get wrong after checking each blob as it encoded it:
// every CRC, the hash chain, the index and the footer (a tape that opens
// only by recovery fails with ErrNoFooter) and, with a key, the seal.
// Commands call it on a tape they have just written or sealed, before they
// report success. Errors name the path.
func ReadBack(path string, key []byte) error {
	return readBack(path, key, nil)
}

// ErrReplaced reports that the file at a tape's path is not the tape this
// process wrote there (ReadBackWritten).
var ErrReplaced = errors.New("not the tape this run wrote: the file was replaced while it was written")

// ReadBackWritten is ReadBack of the tape w (closed) has just written at
// path, which also checks that the file there is that tape: its id and
// chain head are w's. Another process can rename a tape of its own over
// the path while it is written (an agent that is not confined can reach
// the tape's folder): that is ErrReplaced, never a tape read back.
func ReadBackWritten(path string, w *Writer) error {
	return readBack(path, nil, w)
}

func readBack(path string, key []byte, w *Writer) error {
	t, err := Open(path) // its errors name the path already
	if err != nil {
		return err
	}
	defer t.Close()
	if w != nil && (t.ID() != w.ID() || t.Head() != w.Head()) {
		return fmt.Errorf("%s: %w (the tape there has id %x; this run wrote %x, whose frames are lost)", path, ErrReplaced, t.ID(), w.ID())
	}
	if rec := t.Recovered(); rec != nil {
		return fmt.Errorf("%s: %w: %d bytes after offset %d do not read", path, ErrNoFooter, rec.BytesDropped(), rec.ValidEnd)
	}
	if _, err := t.Verify(VerifyOptions{Key: key}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// verifyRecords walks the records, checking each against the chain and the
// index. The first pass skips CRCs; only when it finds a problem does a
// second pass with CRCs run, so that the error names the first bad frame.
func (t *Tape) verifyRecords(rep *VerifyReport, refs bool) error {
	fast := *rep
	err := t.walkRecords(&fast, refs, true)
	if err == nil {
		*rep = fast
		return nil
	}
	if slow := t.walkRecords(rep, refs, false); slow != nil {
		return slow
	}
	return err
}

func (t *Tape) walkRecords(rep *VerifyReport, refs, noCRC bool) error {
	var table []byte
	if t.closed {
		var err error
		if table, err = t.loadFrameTable(); err != nil {
			return err
		}
	}
	blobs, err := t.blobTable()
	if err != nil {
		return err
	}
	c := newChain()
	sc := newScanner(t.readerAt(), fileHeaderSize, t.ft.recordsEnd)
	sc.noCRC = noCRC
	defer sc.release()
	var r record
	for {
		if err := sc.next(&r); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if r.typ == recBlob {
			if err := checkBlobIndexed(&r, blobs); err != nil {
				return err
			}
			rep.Blobs++
			continue
		}
		if err := t.checkFrame(&r, rep, c, table, refs, blobs); err != nil {
			return err
		}
		c.Write(r.bytes)
		rep.Frames++
	}
	rep.Head = c.head()
	return t.checkTotals(rep, len(blobs))
}

func checkBlobIndexed(r *record, blobs map[Hash]blobLoc) error {
	bh, _ := parseBlobHeader(r.bytes, r.off)
	if loc, ok := blobs[bh.Hash]; !ok || loc.off != r.off {
		return formatErr(r.off, "blob %s is not in the index at this offset", bh.Hash.Short())
	}
	return nil
}

// checkFrame checks one frame's index entry, step chain and blobs.
func (t *Tape) checkFrame(r *record, rep *VerifyReport, c chain, table []byte, refs bool, blobs map[Hash]blobLoc) error {
	f := &r.frame
	if table != nil {
		i := rep.Frames * frameEntrySize
		if i+frameEntrySize > len(table) {
			return frameErr(r.off, f.Seq, "frame is missing from the index")
		}
		e := table[i : i+frameEntrySize]
		if le.Uint64(e) != uint64(f.Offset)|uint64(f.Kind)<<56 || time.Duration(le.Uint64(e[8:])) != f.Time {
			return frameErr(r.off, f.Seq, "index entry does not match the record")
		}
	}
	if f.Kind == KindStep {
		if err := checkStep(*f, c.link(), rep); err != nil {
			return err
		}
	}
	if refs {
		return checkRefs(*f, blobs)
	}
	return nil
}

// checkStep checks a step frame's chain head against the running chain. The
// writer's own encoding is recognised by re-encoding, several times faster
// than decoding JSON; anything else is decoded.
func checkStep(f Frame, head Hash, rep *VerifyReport) error {
	want := Step{Step: uint64(rep.Steps), Chain: head}
	if b, err := json.Marshal(want); err != nil || !bytes.Equal(b, f.Payload) {
		var got Step
		if err := json.Unmarshal(f.Payload, &got); err != nil {
			return frameErr(f.Offset, f.Seq, "step payload: %v", err)
		}
		if got.Chain != head {
			return frameErr(f.Offset, f.Seq, "hash chain broken: %s was changed after it was written", frameRange(rep.lastStep, f.Seq))
		}
	}
	rep.lastStep = f.Seq + 1
	rep.Steps++
	return nil
}

// frameRange names the frames from first up to (not including) end.
func frameRange(first, end uint64) string {
	switch {
	case end <= first:
		return "this step frame's link"
	case end == first+1:
		return fmt.Sprintf("frame %d", first)
	}
	return fmt.Sprintf("one of frames %d to %d", first, end-1)
}

// BlobRefs returns the blobs a payload names, zero hashes left out.
func BlobRefs(p Payload) []Hash {
	br, ok := p.(blobReferrer)
	if !ok {
		return nil
	}
	var hs []Hash
	for _, h := range br.blobRefs() {
		if !h.IsZero() {
			hs = append(hs, h)
		}
	}
	return hs
}

// checkRefs decodes the payload and checks that the blobs it names exist.
func checkRefs(f Frame, blobs map[Hash]blobLoc) error {
	p, err := f.Decode()
	if err != nil {
		return err
	}
	for _, h := range BlobRefs(p) {
		if _, found := blobs[h]; !found {
			return frameErr(f.Offset, f.Seq, "%s names blob %s, which is not on the tape", f.Kind, h.Short())
		}
	}
	return nil
}

func (t *Tape) checkTotals(rep *VerifyReport, blobs int) error {
	end := t.ft.recordsEnd
	switch {
	case uint64(rep.Frames) != t.ft.frames:
		return formatErr(end, "the index lists %d frames, the records hold %d", t.ft.frames, rep.Frames)
	case rep.Blobs != blobs:
		return formatErr(end, "the index lists %d blobs, the records hold %d", blobs, rep.Blobs)
	case rep.Head != t.ft.head:
		return formatErr(end, "chain head in the footer does not match the frames")
	case uint64(rep.Steps) != t.ft.steps:
		return formatErr(end, "the footer counts %d steps, the records hold %d", t.ft.steps, rep.Steps)
	}
	return nil
}

// verifyBlobs decodes every blob from its record and checks its hash.
func (t *Tape) verifyBlobs() error {
	blobs, err := t.blobTable()
	if err != nil {
		return err
	}
	for _, h := range sortedHashes(blobs) {
		if _, err := t.OwnBlob(h); err != nil {
			return err
		}
	}
	return nil
}
