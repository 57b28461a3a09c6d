package main

import (
	"errors"
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// SealCmd seals tapes.
type SealCmd struct {
	Tapes   []string `arg:"" help:"Tape files (.jbx) to seal; each must be whole and closed." type:"existingfile"`
	KeyFile string   `required:"" help:"File holding the key (16 to 64 bytes; surrounding whitespace is trimmed)." type:"existingfile" placeholder:"FILE"`
	Replace bool     `help:"Replace the seal of a tape sealed with another key (that seal cannot be had back)."`
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
	// A seal made with another key is not replaced unless asked: it
	// cannot be had back. Every tape is checked before any is sealed.
	for _, p := range c.Tapes {
		if err := c.checkSealed(p, key); err != nil {
			return err
		}
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

// checkSealed refuses a tape sealed with another key, unless --replace.
// A tape that does not open is left to Seal, which says why.
func (c *SealCmd) checkSealed(path string, key []byte) error {
	t, err := tapefmt.Open(path)
	if err != nil {
		return nil
	}
	defer t.Close()
	if !t.Sealed() || c.Replace {
		return nil
	}
	if err := t.CheckSeal(key); errors.Is(err, tapefmt.ErrSeal) {
		return withCode(ExitUsage, fmt.Errorf("%s is sealed with another key: --replace overwrites that seal, which cannot be had back (jukebox verify --key-file checks a key against it); nothing was sealed", path))
	}
	return nil
}
