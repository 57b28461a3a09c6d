package main

import (
	"fmt"
	"os"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// RecoverCmd rewrites a torn tape as a closed one.
type RecoverCmd struct {
	Tape   string `arg:"" type:"existingfile" help:"The torn tape (one a crash left without its footer)."`
	Output string `short:"o" required:"" type:"path" placeholder:"FILE" help:"Where to write the whole tape (never overwritten); the torn file is left as it is."`
	JSON   bool   `help:"Print the result as JSON."`
}

// Run copies the frames up to the last whole step into a new, closed tape.
func (c *RecoverCmd) Run(env *Env) error {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	rec := t.Recovered()
	if rec == nil {
		return withCode(ExitUsage, fmt.Errorf("%s is whole (it has its footer): nothing to recover", c.Tape))
	}
	if _, err := os.Lstat(c.Output); err == nil {
		// As record and replay say it: it was the writer's "create tape:
		// open ...: file exists", exit 1.
		return withCode(ExitUsage, fmt.Errorf("-o %s is there, and recover does not overwrite a tape: remove it or name another", c.Output))
	}
	n, err := tapefmt.Rewrite(t, c.Output)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Tape, err)
	}
	if c.JSON {
		return writeJSON(env.Stdout, map[string]any{"tape": c.Output, "frames": n, "dropped": rec})
	}
	fmt.Fprintf(env.Stdout, "recovered %s: %d frames up to the last whole step; dropped %d frames and %d bytes (%s)\n",
		c.Output, n, rec.FramesDropped, rec.BytesDropped(), rec.Reason)
	return nil
}
