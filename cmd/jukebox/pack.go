package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/engine"
)

// PackCmd makes a fork self-contained.
type PackCmd struct {
	Fork   string `arg:"" type:"existingfile" help:"The fork tape."`
	Parent string `type:"existingfile" placeholder:"FILE" help:"The parent tape (default: where the fork says it was)."`
	Output string `short:"o" required:"" type:"path" placeholder:"FILE" help:"The packed tape to write (never overwritten)."`
	JSON   bool   `help:"Print the result as JSON."`
}

// Run packs the parent's prefix and the fork's own frames into one tape.
func (c *PackCmd) Run(env *Env) error {
	n, err := engine.Pack(c.Fork, c.Parent, c.Output)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env.Stdout, map[string]any{"tape": c.Output, "frames": n})
	}
	fmt.Fprintf(env.Stdout, "packed %s: %d frames, the parent's prefix included\n", c.Output, n)
	return nil
}
