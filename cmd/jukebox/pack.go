package main

import (
	"context"
	"fmt"

	"github.com/jukebox-os/jukebox/engine"
)

// PackCmd makes a fork self-contained.
type PackCmd struct {
	Fork   string `arg:"" type:"tape" help:"The fork tape (a file, or a tape in a store)."`
	Parent string `type:"tape" placeholder:"FILE" help:"The parent tape (default: where the fork says it was)."`
	Output string `short:"o" required:"" type:"path" placeholder:"FILE" help:"The packed tape to write (never overwritten)."`
	JSON   bool   `help:"Print the result as JSON."`
}

// Run packs the parent's prefix and the fork's own frames into one tape.
func (c *PackCmd) Run(ctx context.Context, env *Env) error {
	var err error
	if c.Fork, err = env.tape(ctx, c.Fork); err != nil {
		return err
	}
	if c.Parent != "" {
		if c.Parent, err = env.tape(ctx, c.Parent); err != nil {
			return err
		}
	}
	n, err := engine.Pack(c.Fork, c.Parent, c.Output, env.remote())
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env.Stdout, map[string]any{"tape": c.Output, "frames": n})
	}
	fmt.Fprintf(env.Stdout, "packed %s: %d frames, the parent's prefix included\n", c.Output, n)
	return nil
}
