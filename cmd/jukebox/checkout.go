package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// CheckoutCmd writes a booth run's workspace as it stood at a frame.
type CheckoutCmd struct {
	Tape  string `arg:"" help:"Tape file (.jbx) of a run in the booth, or a tape in a store." type:"tape"`
	Dir   string `arg:"" help:"Folder to write the workspace into: made when missing; must be empty unless --force." type:"path"`
	Frame int    `required:"" help:"The frame to check out: the workspace as it stood there (run.start is the run's start)." placeholder:"N"`
	Force bool   `help:"Write into a folder that is not empty, replacing what the workspace holds."`
	JSON  bool   `help:"Print one JSON object: the frame, where the start came from, the paths written and those that could not be rebuilt."`
}

// checkoutJSON is the --json shape of a checkout.
type checkoutJSON struct {
	Frame    int                      `json:"frame"`
	Dir      string                   `json:"dir"`
	Folder   string                   `json:"folder"`
	Snapshot bool                     `json:"snapshot"`
	Steps    bool                     `json:"steps"`
	Gone     bool                     `json:"folder_gone,omitempty"`
	Written  int                      `json:"written"`
	Changed  []timeline.WorkspaceFile `json:"changed"`
	Missing  []timeline.WorkspaceFile `json:"missing"`
}

// Run rebuilds the workspace and writes it.
func (c *CheckoutCmd) Run(env *Env) error {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	ws, err := timeline.WorkspaceOf(t, c.Tape, c.Frame)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("%s: --frame %d: %w", c.Tape, c.Frame, err))
	}
	if err := emptyFolder(c.Dir, c.Force, "--force"); err != nil {
		return withCode(ExitUsage, err)
	}
	n, err := ws.WriteTo(c.Dir)
	if err != nil {
		return fmt.Errorf("checkout of frame %d into %s: %w", c.Frame, c.Dir, err)
	}
	missing := ws.Missing()
	if c.JSON {
		out := checkoutJSON{Frame: c.Frame, Dir: c.Dir, Folder: ws.Folder, Snapshot: ws.Snapshot, Steps: ws.Steps, Gone: ws.FolderGone,
			Written: n, Changed: ws.Changed(), Missing: missing}
		if out.Missing == nil {
			out.Missing = []timeline.WorkspaceFile{}
		}
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		c.report(env, ws, n, missing)
	}
	if len(missing) > 0 {
		return withCode(ExitInternal, fmt.Errorf("frame %d: %d of the workspace's files could not be rebuilt", c.Frame, len(missing)))
	}
	return nil
}

// report says what was written and from where.
func (c *CheckoutCmd) report(env *Env, ws *timeline.Workspace, n int, missing []timeline.WorkspaceFile) {
	from := "the snapshot on the tape"
	if !ws.Snapshot {
		from = "the recorded folder " + termtext.Quote(ws.Folder) + " as it is now (the tape has no snapshot)"
	}
	fmt.Fprintf(env.Stdout, "frame %d: wrote %d paths into %s, from %s, %d changed by the agent\n",
		c.Frame, n, termtext.Quote(c.Dir), from, len(ws.Changed()))
	if ws.FolderGone {
		fmt.Fprintf(env.Stdout, "the recorded folder %s is gone and the tape has no snapshot: only the files the agent wrote are here\n", termtext.Quote(ws.Folder))
	}
	if !ws.Steps {
		fmt.Fprintln(env.Stdout, "the tape has no step records: the agent's changes show only from the change set on, at the run's end")
	}
	for _, m := range missing {
		fmt.Fprintf(env.Stdout, "not rebuilt: %s: %s\n", termtext.Quote(m.Path), m.Why)
	}
}

// emptyFolder makes dir, or checks it is empty (unless force; forceFlag
// names the flag that forces, "" where none does).
func emptyFolder(dir string, force bool, forceFlag string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case len(ents) > 0 && !force && forceFlag != "":
		return fmt.Errorf("%s is not empty: write into an empty folder, or pass %s to write over it", dir, forceFlag)
	case len(ents) > 0 && !force:
		return fmt.Errorf("%s is not empty: name an empty folder", dir)
	}
	return nil
}
