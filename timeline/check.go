package timeline

// A whole-tape check for the turntable: every frame and every blob it
// names, the hash chain, the index and the seal, in the background.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// FrameError says why a frame cannot be read in full: its record, or a
// blob it names, does not decode. It names the frame, the byte offset of
// the damage and the reason, and wraps the tapefmt error.
type FrameError struct {
	Frame  int
	Offset int64        // byte offset in the file of the bad record; -1 when unknown
	Blob   tapefmt.Hash // the blob that does not read; zero when the frame's own record does not
	Role   string       // the blob's part in the frame: "body" or "before"
	Reason string       // what is wrong, without the offset
	Err    error
	// Unread says the bytes did not arrive (an I/O error, a store that did
	// not answer): not damage, and not kept as such (reading again may
	// work).
	Unread bool
}

// Error names the frame, the blob and its part, the offset and the reason.
func (e *FrameError) Error() string {
	at := ""
	if e.Offset >= 0 {
		at = fmt.Sprintf(" at offset %d", e.Offset)
	}
	if e.Blob.IsZero() {
		return fmt.Sprintf("frame %d unreadable%s: %s", e.Frame, at, e.Reason)
	}
	return fmt.Sprintf("frame %d unreadable: its %s blob %s%s: %s", e.Frame, e.Role, e.Blob.Short(), at, e.Reason)
}

// Unwrap returns the tapefmt error.
func (e *FrameError) Unwrap() error { return e.Err }

// newFrameError describes err, met reading frame i (or blob h of it, in
// role), as a *FrameError; nil when err is nil.
func newFrameError(i int, role string, h tapefmt.Hash, err error) *FrameError {
	if err == nil {
		return nil
	}
	var fe *FrameError
	if errors.As(err, &fe) {
		return fe
	}
	var re *tapefmt.ReadError
	e := &FrameError{Frame: i, Offset: -1, Blob: h, Role: role, Reason: strings.TrimPrefix(err.Error(), "tapefmt: "), Err: err,
		Unread: errors.As(err, &re)}
	var tf *tapefmt.FormatError
	if errors.As(err, &tf) {
		// The offset is the FormatError's, even when it is wrapped (the
		// base of a delta blob): that is where the damage is.
		e.Offset = tf.Offset
		e.Reason = strings.TrimPrefix(strings.Replace(err.Error(), tf.Error(), tf.Msg, 1), "tapefmt: ")
	}
	// The reader's messages name the blob already; the error says it once.
	e.Reason = strings.TrimPrefix(e.Reason, "blob "+h.Short()+": ")
	return e
}

// damageSet is the frames of a timeline found unreadable, by Detail or by
// Check. The Timeline's mutex guards it.
type damageSet map[int]*FrameError

// noteDamage records e (when not nil) against its frame, so its row shows
// the error and Next(FindError) stops there. The first error of a frame is
// kept; bytes that did not arrive (Unread) are no damage and not kept.
func (tl *Timeline) noteDamage(e *FrameError) *FrameError {
	if e == nil || e.Unread {
		return e
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.damage == nil {
		tl.damage = damageSet{}
	}
	if _, ok := tl.damage[e.Frame]; !ok {
		tl.damage[e.Frame] = e
		delete(tl.rows, e.Frame) // the cached row does not say so yet
	}
	return e
}

// Damaged says whether a frame has been found unreadable (Detail, Check):
// sums over the tape then leave out what it held.
func (tl *Timeline) Damaged() bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.damage) > 0
}

// damageAt returns why frame i cannot be read in full, once Detail or
// Check has found it, or nil.
func (tl *Timeline) damageAt(i int) *FrameError {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.damage[i]
}

// TapeState is the verdict of a whole-tape check.
type TapeState uint8

// The verdicts, from the best news to the worst.
const (
	TapeChainOK TapeState = iota + 1 // every frame, blob and chain link checks out; not sealed, no key asked for
	TapeSealed                       // checks out and is sealed; no key was given, so the seal was not checked
	TapeSealOK                       // checks out and the seal matches the key
	TapeSealBad                      // checks out, but the seal does not match the key or there is none
	TapeTorn                         // no footer: opened up to its last whole step (Recovery says what was dropped)
	TapeDamaged                      // a frame, a blob, the chain or the index does not check out
)

// TapeCheck is what Check found.
type TapeCheck struct {
	State    TapeState
	Frames   int           // frames walked
	Blobs    int           // distinct blobs decoded
	Damage   []*FrameError // the frames that do not read in full, in order, each with its first problem
	Err      error         // the first problem Verify found (chain, index, blobs, seal), or nil
	Recovery *tapefmt.Recovery
}

// FirstDamaged returns the first damaged frame, or -1 when no frame is
// (the damage, if any, lies outside every frame: see Err).
func (c *TapeCheck) FirstDamaged() int {
	if len(c.Damage) == 0 {
		return -1
	}
	return c.Damage[0].Frame
}

// checkTape is Check of tape t, without a timeline to record the damage in.
func checkTape(ctx context.Context, t *tapefmt.Tape, key []byte) (*TapeCheck, error) {
	if key != nil && (len(key) < tapefmt.MinKeySize || len(key) > tapefmt.MaxKeySize) {
		return nil, fmt.Errorf("seal key is %d bytes, want %d to %d", len(key), tapefmt.MinKeySize, tapefmt.MaxKeySize)
	}
	c := &TapeCheck{Recovery: t.Recovered()}
	if err := c.walk(ctx, t); err != nil {
		return nil, err
	}
	type verified struct {
		rep *tapefmt.VerifyReport
		err error
	}
	done := make(chan verified, 1)
	go func() {
		// The walk decoded every blob a frame names; Verify adds the CRCs
		// of every record (unnamed blobs too), the chain, the index and
		// the seal without decoding the blobs a second time.
		rep, err := t.Verify(tapefmt.VerifyOptions{Key: key})
		done <- verified{rep, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-done:
		c.judge(v.rep, v.err, key != nil)
	}
	return c, nil
}

// walk decodes every frame and the blobs it names, each blob once.
func (c *TapeCheck) walk(ctx context.Context, t *tapefmt.Tape) error {
	blobs := map[tapefmt.Hash]error{}
	for i := range t.Len() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.Frames++
		f, err := t.Frame(i)
		if err != nil {
			c.Damage = append(c.Damage, newFrameError(i, "", tapefmt.Hash{}, err))
			continue
		}
		p, err := f.Decode()
		if err != nil {
			c.Damage = append(c.Damage, newFrameError(i, "", tapefmt.Hash{}, err))
			continue
		}
		for j, h := range tapefmt.BlobRefs(p) {
			err, seen := blobs[h]
			if !seen {
				_, err = t.OwnBlob(h)
				blobs[h] = err
				c.Blobs++
			}
			if err != nil {
				c.Damage = append(c.Damage, newFrameError(i, blobRole(p, j), h, err))
				break
			}
		}
	}
	return nil
}

// blobRole names the j-th blob of p as Detail's BlobRefs do.
func blobRole(p tapefmt.Payload, j int) string {
	if _, ok := p.(*tapefmt.FileChange); ok && j > 0 {
		return "before"
	}
	return "body"
}

// judge turns the walk and Verify's answer into the verdict.
func (c *TapeCheck) judge(rep *tapefmt.VerifyReport, err error, keyed bool) {
	c.Err = err
	var fe *tapefmt.FormatError
	seal := errors.Is(err, tapefmt.ErrSeal) || errors.Is(err, tapefmt.ErrNotSealed)
	switch {
	case c.Recovery != nil && (err == nil || seal):
		c.State = TapeTorn // a torn tape has no seal: saying torn says more
	case seal:
		c.State = TapeSealBad
	case errors.As(err, &fe) && fe.Frame >= 0:
		c.addDamage(newFrameError(int(fe.Frame), "", tapefmt.Hash{}, err))
		c.State = TapeDamaged
	case err != nil:
		c.State = TapeDamaged
	case keyed:
		c.State = TapeSealOK
	case rep != nil && rep.Sealed:
		c.State = TapeSealed
	default:
		c.State = TapeChainOK
	}
	if len(c.Damage) > 0 {
		c.State = TapeDamaged
	}
}

// addDamage adds e unless its frame is listed already, keeping the order.
func (c *TapeCheck) addDamage(e *FrameError) {
	i, found := slices.BinarySearchFunc(c.Damage, e.Frame, func(d *FrameError, f int) int { return d.Frame - f })
	if !found {
		c.Damage = slices.Insert(c.Damage, i, e)
	}
}

// Check walks every frame of the timeline's tape, decodes it and every
// blob it names, then verifies the CRCs, the hash chain, the index, every
// blob and, with a key, the seal (tapefmt.Tape.Verify). Unlike Verify,
// which stops at the first problem, the walk lists every damaged frame,
// and records each so that rows show the error and Next(FindError) stops
// there. It returns ctx.Err() as soon as ctx is done; Verify itself cannot
// be interrupted, so when ctx ends during it, it finishes in the
// background (or fails at once when the tape is closed). Opening costs
// nothing: start it after the first screen.
func (tl *Timeline) Check(ctx context.Context, key []byte) (*TapeCheck, error) {
	c, err := checkTape(ctx, tl.t, key)
	if err != nil {
		return nil, err
	}
	for _, e := range c.Damage {
		tl.noteDamage(e)
	}
	return c, nil
}

// blobErr says why the first of frame i's blobs (its body, then its
// content before) that does not read fails, recording the damage; nil when
// all read. Detail reads each blob for display first, so this is a cache
// hit unless the blob is bad.
func (tl *Timeline) blobErr(i int, blobs ...tapefmt.Hash) error {
	for j, h := range blobs {
		if h.IsZero() {
			continue
		}
		if _, err := tl.t.Blob(h); err != nil {
			return tl.noteDamage(newFrameError(i, []string{"body", "before"}[min(j, 1)], h, err))
		}
	}
	return nil
}

// Errs returns every part of the frame, and of the call or tool it pairs
// with, that does not read, each once: what the frame view must show
// instead of an empty body.
func (d *Detail) Errs() []*FrameError {
	var out []*FrameError
	add := func(err error) {
		var e *FrameError
		if !errors.As(err, &e) {
			return
		}
		for _, o := range out {
			if o.Frame == e.Frame && o.Blob == e.Blob {
				return
			}
		}
		out = append(out, e)
	}
	if d.Damage != nil {
		add(d.Damage)
	}
	for _, b := range d.Blobs {
		add(b.Err)
	}
	if c := d.Call; c != nil {
		add(c.RequestErr)
		add(c.ResponseErr)
	}
	if d.Tool != nil {
		add(d.Tool.Err)
	}
	if d.File != nil {
		add(d.File.Err)
	}
	return out
}
