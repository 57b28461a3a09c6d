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
	JSON    bool     `help:"Print one JSON array of {path, seal}, or {path, error} for a tape not sealed."`
}

type sealResult struct {
	Path  string `json:"path"`
	Seal  string `json:"seal,omitempty"`
	Error string `json:"error,omitempty"`
}

// Run verifies each tape in full, then writes the seal into its footer.
// A tape that cannot be sealed (not a tape, damaged, torn) is named and
// the others are sealed all the same; the exit code is then the worst
// of theirs (3 for a bad tape).
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
	code, failed := ExitOK, 0
	for _, p := range c.Tapes {
		mac, err := tapefmt.Seal(p, key)
		if err != nil {
			code, failed = worse(code, codeFor(err)), failed+1
			out = append(out, sealResult{Path: p, Error: err.Error()})
			if !c.JSON {
				fmt.Fprintf(env.Stdout, "FAILED %s: %v\n", p, err)
			}
			continue
		}
		out = append(out, sealResult{Path: p, Seal: mac.String()})
		if !c.JSON {
			fmt.Fprintf(env.Stdout, "sealed %s: %s\n", p, mac)
		}
	}
	if c.JSON {
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	}
	if failed > 0 {
		return withCode(code, fmt.Errorf("%d of %d tapes not sealed", failed, len(c.Tapes)))
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
