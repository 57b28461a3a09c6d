package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// VerifyCmd checks tapes.
type VerifyCmd struct {
	Tapes   []string `arg:"" help:"Tape files (.jbx), folders searched for them (as jukebox test searches), or tapes in a store (s3://BUCKET/PREFIX/NAME.jbx)." type:"tapes"`
	KeyFile string   `help:"Also check the seal with the key in this file." type:"existingfile" placeholder:"FILE"`
	Quick   bool     `help:"Skip decoding and re-hashing blobs: check CRCs, the chain and the index only."`
	JSON    bool     `help:"Print one JSON array of results."`
}

// verifyResult is one tape's outcome.
type verifyResult struct {
	Path   string            `json:"path"`
	OK     bool              `json:"ok"`
	Frames int               `json:"frames"`
	Blobs  int               `json:"blobs"`
	Steps  int               `json:"steps"`
	Head   string            `json:"chain_head,omitempty"`
	Sealed bool              `json:"sealed"`
	SealOK bool              `json:"seal_ok,omitempty"`
	Torn   *tapefmt.Recovery `json:"torn,omitempty"`
	// Recording: a run is still writing the tape; what it holds so far
	// verified, and it has no end yet (not torn).
	Recording bool   `json:"recording,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrFrame  *int64 `json:"error_frame,omitempty"`
	ErrOff    *int64 `json:"error_offset,omitempty"`
	err       error
}

// Run verifies every tape and exits non-zero if any fails.
func (c *VerifyCmd) Run(ctx context.Context, env *Env) error {
	var key []byte
	if c.KeyFile != "" {
		var err error
		if key, err = readKeyFile(c.KeyFile); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	tapes, err := c.paths()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	results := make([]verifyResult, 0, len(tapes))
	code := ExitOK
	for _, p := range tapes {
		opts := tapefmt.VerifyOptions{Blobs: !c.Quick, Key: key}
		var r verifyResult
		if tapestore.IsURL(p) {
			r = verifyURL(ctx, env, p, opts)
		} else {
			r = verifyOne(env.remote(), p, opts)
		}
		if r.err != nil {
			code = worse(code, codeFor(r.err))
		}
		results = append(results, r)
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			fmt.Fprintln(env.Stdout, r.line())
		}
	}
	if code != ExitOK {
		return withCode(code, errSilent)
	}
	return nil
}

// worse picks the exit code that matters more: a damaged tape over a seal
// mismatch over anything else.
func worse(a, b int) int {
	rank := map[int]int{ExitOK: 0, ExitInternal: 1, ExitSeal: 2, ExitBadTape: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// verifyURL verifies the tape a store URL names as the store holds it
// now: its bytes are fetched whole (one GET, whatever the cache holds),
// checked, and kept in the cache under their SHA-256 only when they pass.
func verifyURL(ctx context.Context, env *Env, url string, opts tapefmt.VerifyOptions) verifyResult {
	f, err := tapestore.Fetch(ctx, url, env.NoCache)
	if err != nil {
		r := verifyResult{Path: url}
		r.setErr(err)
		return r
	}
	// Bytes proven the same (their SHA-256) as bytes that passed the full
	// check before are not checked again: the report kept with them is
	// theirs. A seal is checked each time (the key may differ).
	full := opts.Blobs && opts.Key == nil
	var r verifyResult
	if b := f.Note(); full && b != nil && json.Unmarshal(b, &r) == nil && r.OK {
		r.Path = url
		if _, err := f.Keep(); err != nil {
			fmt.Fprintf(env.Stderr, "jukebox: warning: %s: %v\n", url, err)
		}
		return r
	}
	if env.NoCache {
		// Nothing is kept: the temporary folder goes with the bytes
		// (kept there, it stayed behind at every run).
		defer f.Drop()
		r = verifyOne(nil, f.Path, opts)
		r.Path, r.Error = url, strings.ReplaceAll(r.Error, f.Path, url)
		return r
	}
	r = verifyOne(nil, f.Path, opts)
	r.Path = url
	if r.err != nil {
		r.Error = strings.ReplaceAll(r.Error, f.Path, url)
		f.Drop()
		return r
	}
	if _, err := f.Keep(); err != nil {
		fmt.Fprintf(env.Stderr, "jukebox: warning: %s verified, and was not kept in the cache: %v\n", url, err)
	} else if full {
		if b, err := json.Marshal(r); err == nil {
			f.KeepNote(b)
		}
	}
	return r
}

func verifyOne(remote tapefmt.RemoteOpener, path string, opts tapefmt.VerifyOptions) verifyResult {
	r := verifyResult{Path: path}
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		r.setErr(err)
		return r
	}
	defer t.Close()
	rep, err := t.Verify(opts)
	r.Frames, r.Blobs, r.Steps, r.Sealed, r.SealOK, r.Torn = rep.Frames, rep.Blobs, rep.Steps, rep.Sealed, rep.SealOK, rep.Recovery
	if err == nil {
		// What the tape holds verifies: a torn tape's head is that of
		// the frames it keeps, which recover writes.
		r.Head = rep.Head.String()
	}
	if rep.Recovery != nil && err == nil && tapefmt.Recording(path) {
		// Its writer holds it still: no footer yet is no damage.
		r.Torn, r.Recording = nil, true
	} else if rep.Recovery != nil && err == nil {
		err = tornError(rep.Recovery)
	} else if rep.Recovery != nil {
		// What the torn tape keeps fails too (its chain broken): that
		// error first, which "no footer" hid.
		err = fmt.Errorf("%w; and it is torn: %s", err, recoveryText(rep.Recovery))
	}
	if err != nil {
		r.setErr(err)
		return r
	}
	// Steps as ls, the turntable and diff count them (the whole steps,
	// and the one the run ended in): it said the step.commit frames'
	// count, one fewer than ls for most tapes.
	if n, err := timeline.StepsOf(t); err == nil {
		r.Steps = n
	}
	r.OK = true
	return r
}

// tornError is what verify says of a torn tape: it is damaged whatever
// else is true of it.
func tornError(rec *tapefmt.Recovery) error {
	return &tapefmt.FormatError{Offset: rec.ValidEnd, Frame: -1, Msg: recoveryText(rec)}
}

func (r *verifyResult) setErr(err error) {
	r.err, r.Error = err, err.Error()
	var fe *tapefmt.FormatError
	if errors.As(err, &fe) {
		off := fe.Offset
		r.ErrOff = &off
		if fe.Frame >= 0 {
			fr := fe.Frame
			r.ErrFrame = &fr
		}
	}
}

func (r verifyResult) line() string {
	if !r.OK {
		// An error that names the tape already is not prefixed with it
		// again ("FAIL  cut.jbx: cut.jbx: tapefmt: ...").
		msg := strings.TrimPrefix(r.Error, r.Path+": ")
		return fmt.Sprintf("FAIL  %s: %s", termtext.Escape(r.Path), termtext.Sanitize(msg))
	}
	seal := "unsealed"
	switch {
	case r.SealOK:
		seal = "seal ok"
	case r.Sealed:
		seal = "sealed"
	}
	if r.Recording {
		return fmt.Sprintf("ok    %s: still being recorded: %d frames, %d blobs, %d steps so far, chain %s", termtext.Escape(r.Path), r.Frames, r.Blobs, r.Steps, r.Head[:16])
	}
	return fmt.Sprintf("ok    %s: %d frames, %d blobs, %d steps, chain %s, %s", termtext.Escape(r.Path), r.Frames, r.Blobs, r.Steps, r.Head[:16], seal)
}

// paths are the tapes to verify: a folder given stands for the tapes
// under it (findTapes), a folder with none is an error naming it.
func (c *VerifyCmd) paths() ([]string, error) {
	var out []string
	for _, p := range c.Tapes {
		if st, err := os.Stat(p); tapestore.IsURL(p) || err != nil || !st.IsDir() {
			out = append(out, p)
			continue
		}
		found, err := findTapes([]string{p})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("no tapes (*.jbx) in %s", p)
		}
		out = append(out, found...)
	}
	return out, nil
}
