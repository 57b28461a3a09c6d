package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/charmbracelet/x/term"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/timeline"
	"github.com/jukebox-os/jukebox/tui"
)

// PlayCmd opens the turntable: the terminal UI over one tape, or two to compare.
type PlayCmd struct {
	Tapes      []string  `arg:"" name:"tape" type:"tape" help:"The tape to play (a file, or a tape in a store); a second tape is shown beside it and diffed with d."`
	Theme      string    `placeholder:"NAME" help:"Colours: diner (the default), plain or high-contrast. NO_COLOR selects plain unless a theme is named here."`
	Background string    `env:"JUKEBOX_BACKGROUND" placeholder:"light|dark" help:"The terminal's background, when asking the terminal gives the wrong answer or none (inside tmux or screen)."`
	Upstream   upstreams `placeholder:"NAME=URL" help:"Where a fork's live calls go, as in record."`
	NoBooth    bool      `help:"Run forks outside the Shadow Booth (by default a fork's file changes are staged and rolled back)."`
	BoothMode  string    `name:"booth-mode" enum:"auto,overlay,reflink,copy" default:"auto" help:"Staging mode of a fork's booth, as record --booth-mode: auto runs the agent confined or refuses the fork; copy runs it unconfined, on purpose."`
	KeyFile    string    `help:"Also check each tape's seal with the key in this file (the header then says seal ✓ or seal ✗)." type:"existingfile" placeholder:"FILE"`
	Frame      *int      `placeholder:"N" help:"Open with the needle on frame N of the first tape (the link jukebox show, diff and exports give)."`
	Keys       string    `env:"JUKEBOX_KEYS" placeholder:"FILE" help:"Key bindings: a JSON object of action names to lists of keys, {\"next_step\": [\"J\"]}, over the defaults (default: keys.json in the user's config folder, jukebox/, when there is one; docs/turntable.md lists the actions)."`

	key    []byte     // read from KeyFile by Validate
	keymap tui.Keymap // read from Keys by Validate
}

// errNotTerminal is play's answer when stdout is a pipe or a file.
var errNotTerminal = errors.New("jukebox play needs a terminal (stdout is not one); to print a tape, use: jukebox show TAPE")

// Validate checks the arguments.
func (c *PlayCmd) Validate() error {
	if len(c.Tapes) > 2 {
		return fmt.Errorf("play takes one tape, or two to compare (got %d)", len(c.Tapes))
	}
	if c.Theme != "" {
		if _, err := themes.Get(c.Theme); err != nil {
			return fmt.Errorf("--theme: %w", err)
		}
	}
	if c.Background != "" && c.Background != "light" && c.Background != "dark" {
		return fmt.Errorf("--background (or JUKEBOX_BACKGROUND) %q: light or dark", c.Background)
	}
	if c.NoBooth && c.BoothMode != "" && c.BoothMode != "auto" {
		return fmt.Errorf("--booth-mode applies to the booth; --no-booth runs forks outside it")
	}
	if c.Frame != nil && !tapestore.IsURL(c.Tapes[0]) { // a store's tape is checked once fetched
		if err := c.checkFrame(nil, c.Tapes[0]); err != nil {
			return err
		}
	}
	if err := c.loadKeys(); err != nil {
		return err
	}
	if c.KeyFile != "" {
		var err error
		if c.key, err = readKeyFile(c.KeyFile); err != nil {
			return err
		}
	}
	return nil
}

// checkFrame checks --frame against the tape at path (a store's, by
// remote).
func (c *PlayCmd) checkFrame(remote tapefmt.RemoteOpener, path string) error {
	n, err := tapeLen(remote, path)
	if err != nil {
		return err
	}
	if *c.Frame < 0 || *c.Frame >= n {
		return fmt.Errorf("--frame %d: %s has frames 0 to %d", *c.Frame, c.Tapes[0], n-1)
	}
	return nil
}

// Run shows the turntable.
func (c *PlayCmd) Run(ctx context.Context, env *Env) error {
	out, ok := env.Stdout.(*os.File)
	if !ok || !term.IsTerminal(out.Fd()) {
		return withCode(ExitUsage, errNotTerminal)
	}
	if c.Frame != nil && tapestore.IsURL(c.Tapes[0]) {
		if err := c.checkFrame(env.remote(), c.Tapes[0]); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	th, r, err := playColours(out, c.Theme, c.Background, os.Getenv)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	verified := uploadChecks(ctx)
	for _, t := range c.Tapes {
		if tapestore.IsURL(t) {
			verified(t) // read now, not while the first screen is drawn
		}
	}
	o := tui.Options{Theme: th, Renderer: r, Upstreams: c.Upstream, PrepareFork: c.prepareFork, Key: c.key, Context: ctx, Frame: c.Frame, KeepMarkers: true, Keys: c.keymap,
		Verified: verified, StoreKin: tapestore.Kin, Remote: env.remote()}
	return tui.Run(c.Tapes, o, env.Stdin, out)
}

// loadKeys reads the key bindings of --keys (JUKEBOX_KEYS), else of the
// user's keys.json when there is one.
func (c *PlayCmd) loadKeys() error {
	path := c.Keys
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil
		}
		path = filepath.Join(dir, "jukebox", "keys.json")
		if _, err := os.Stat(path); err != nil {
			return nil // none: the defaults
		}
	}
	km, err := tui.LoadKeymap(path)
	if err != nil {
		return fmt.Errorf("key bindings (--keys or JUKEBOX_KEYS, else the user's jukebox/keys.json): %w", err)
	}
	c.keymap = km
	return nil
}

// prepareFork completes a fork started from the turntable as `jukebox fork`
// would: the run's name (the form's, else the parent's), the parent's
// working directory, and the booth (rolled back at the end) unless
// --no-booth; where the booth cannot run, the fork is refused with the
// reason, shown in the fork form. The tape goes beside the parent, where
// the fork list (b) finds it again (the turntable names it), but for a
// store's tape, or one in a folder jukebox cannot write: in ./tapes.
// Nothing may print: the screen belongs to the turntable.
func (c *PlayCmd) prepareFork(fo *engine.ForkOptions) error {
	if !c.NoBooth {
		if err := boothUnavailable("restart with jukebox play --no-booth to fork outside it"); err != nil {
			return err
		}
	}
	start, err := parentStart(fo.Remote, fo.Parent, nil)
	if err != nil {
		return err
	}
	name := tapeName(start)
	if fo.Name == "" {
		fo.Name = name
	} else {
		name = fo.Name // the form's: NAME-fork... in ./tapes too
	}
	if timeline.IsRemote(fo.Parent) || writable(filepath.Join(filepath.Dir(fo.Parent), "fork.jbx")) != nil {
		if fo.Tape, err = tapePath("", name+"-fork"); err != nil {
			return err
		}
		if abs, err := filepath.Abs(fo.Tape); err == nil {
			fo.Tape = abs
		}
	}
	fo.Version, fo.AutoName, fo.QuietSDKs = version, true, true
	if st, err := os.Stat(start.Cwd); err == nil && st.IsDir() {
		fo.Dir = start.Cwd
	}
	if !c.NoBooth {
		fo.Booth = &engine.BoothOptions{Commit: engine.CommitNever, Mode: sandbox.Mode(c.BoothMode), Notice: io.Discard}
	}
	return nil
}

// tapeLen is the number of frames of the tape at path (a store's, by
// remote).
func tapeLen(remote tapefmt.RemoteOpener, path string) (int, error) {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	return t.Len(), nil
}
