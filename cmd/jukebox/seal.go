package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// SealCmd seals tapes.
type SealCmd struct {
	Tapes   []string `arg:"" help:"Tape files (.jbx) to seal; each must be whole and closed." type:"existingfile"`
	KeyFile string   `required:"" help:"File holding the key (16 to 64 bytes; surrounding whitespace is trimmed)." type:"existingfile" placeholder:"FILE"`
	JSON    bool     `help:"Print one JSON array of {path, seal}."`
}

type sealResult struct {
	Path string `json:"path"`
	Seal string `json:"seal"`
}

// Run verifies each tape in full, then writes the seal into its footer.
func (c *SealCmd) Run(env *Env) error {
	key, err := readKeyFile(c.KeyFile)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	var out []sealResult
	for _, p := range c.Tapes {
		mac, err := tapefmt.Seal(p, key)
		if err != nil {
			return err
		}
		out = append(out, sealResult{Path: p, Seal: mac.String()})
		if !c.JSON {
			fmt.Fprintf(env.Stdout, "sealed %s: %s\n", p, mac)
		}
	}
	if c.JSON {
		return writeJSON(env.Stdout, out)
	}
	return nil
}
