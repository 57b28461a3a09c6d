package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/charmbracelet/x/term"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// defaultDiffWidth is the side-by-side width when neither --width, $COLUMNS
// nor the terminal says otherwise.
const defaultDiffWidth = 160

// DiffCmd compares two tapes: it aligns their frames on signatures, names
// the first divergence, shows each changed pair with a word diff, and sums
// cost, tokens, latency and steps per side. Differing tapes are not an
// error: it exits 0 either way (3 when a tape is damaged or not a tape).
type DiffCmd struct {
	Left    string `arg:"" name:"a" help:"Left tape (.jbx), e.g. the original run." type:"tape"`
	Right   string `arg:"" name:"b" help:"Right tape (.jbx), e.g. its fork." type:"tape"`
	JSON    bool   `help:"Print the alignment (every pair, with word diffs), the first divergence and the totals as JSON."`
	Unified bool   `help:"Print one column with inline word diffs, [-deleted-] and {+inserted+}, instead of two side by side."`
	Width   int    `help:"Width of the side-by-side output (default: $COLUMNS, else the terminal's, else 160)." placeholder:"N"`
	All     bool   `help:"Show every frame and every body line; by default same frames and unchanged lines are folded."`
	Color   string `help:"Colour the output: auto (a terminal without NO_COLOR), always or never." enum:"auto,always,never" default:"auto"`
}

// Validate checks the flags before any tape is read.
func (c *DiffCmd) Validate() error {
	if c.JSON && c.Unified {
		return errors.New("--json and --unified cannot be combined")
	}
	if c.Width != 0 && (c.Unified || c.JSON) {
		// It was taken and ignored (and below 64, refused for the view not asked for).
		return errors.New("--width sets the side-by-side view's width: --unified and --json print whole lines")
	}
	if c.Width != 0 && c.Width < diffview.MinWidth {
		return fmt.Errorf("--width %d: the side-by-side view needs at least %d columns", c.Width, diffview.MinWidth)
	}
	return nil
}

// Run compares the tapes and prints the result.
func (c *DiffCmd) Run(env *Env) error {
	var right diffview.Timeline
	var rightWarn string
	var rightErr error
	done := make(chan struct{})
	go func() { // the tapes load side by side: decoding every request body is most of the work
		defer close(done)
		right, rightWarn, rightErr = loadTimeline(env.remote(), c.Right)
	}()
	left, leftWarn, err := loadTimeline(env.remote(), c.Left)
	<-done
	for _, w := range []string{leftWarn, rightWarn} {
		if w != "" {
			fmt.Fprintln(env.Stderr, "warning: "+w)
		}
	}
	if err = cmp.Or(err, rightErr); err != nil {
		return err
	}
	r := diffview.Compare(left, right)
	if c.JSON {
		return writeJSON(env.Stdout, r.Report())
	}
	o := diffview.Options{Width: c.width(env.Stdout), All: c.All, Styles: diffview.PlainStyles()}
	if useColor(c.Color, env.Stdout) {
		o.Styles = diffview.ANSIStyles()
	}
	out := diffview.SideBySide(r, o)
	if c.Unified {
		out = diffview.Unified(r, o)
	}
	_, err = io.WriteString(env.Stdout, out)
	return err
}

// loadTimeline reads a tape's timeline, with a warning when the tape had to
// be recovered. A file that is not a tape fails with a tapefmt.FormatError.
func loadTimeline(remote tapefmt.RemoteOpener, path string) (tl diffview.Timeline, warning string, err error) {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return tl, "", err
	}
	defer t.Close()
	if rec := t.Recovered(); rec != nil {
		warning = path + ": " + recoveryText(rec)
	}
	if tl, err = timeline.ForDiff(t, path); err != nil {
		return tl, warning, fmt.Errorf("%s: %w", path, err)
	}
	return tl, warning, nil
}

// width is --width, else $COLUMNS, else the terminal's width, else 160.
func (c *DiffCmd) width(w io.Writer) int {
	if c.Width > 0 {
		return c.Width
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return max(n, diffview.MinWidth)
	}
	if f, ok := w.(*os.File); ok {
		if n, _, err := term.GetSize(f.Fd()); err == nil && n > 0 {
			return max(n, diffview.MinWidth)
		}
	}
	return defaultDiffWidth
}

// useColor decides --color: auto colours a terminal unless NO_COLOR is set
// or TERM is dumb.
func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
