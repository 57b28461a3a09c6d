package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jukebox-os/jukebox/redact"
)

// redactFlags name secrets to mask in what a run writes on its tape:
// prompts, responses, output, tool calls and files. The patterns go on the
// tape (never what they matched), and replay and fork of that tape apply
// them again to live requests, so that the masked recording still matches.
type redactFlags struct {
	Redact     []string `sep:"none" placeholder:"REGEX" help:"Mask what this regular expression (Go RE2 syntax) matches in everything the tape keeps: request and response bodies, the agent's output, tool calls, files. A match becomes [redacted] whatever its length (JSON stays valid); a streamed answer is matched in its assembled text. The pattern is kept on the tape; replay and fork apply it again. Repeatable."`
	RedactFile string   `type:"existingfile" placeholder:"FILE" help:"Patterns for --redact, one per line; blank lines and lines starting with # are skipped."`
}

// patterns are the flags' patterns, the file's first; a pattern that does
// not compile (or matches the empty string) is an error naming it.
func (f redactFlags) patterns() ([]string, error) {
	var out []string
	if f.RedactFile != "" {
		file, err := os.Open(f.RedactFile)
		if err != nil {
			return nil, fmt.Errorf("--redact-file: %w", err)
		}
		defer file.Close()
		sc := bufio.NewScanner(file)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if _, err := redact.NewMasker([]string{line}); err != nil {
				return nil, fmt.Errorf("--redact-file %s, line %d: %w", f.RedactFile, n, err)
			}
			out = append(out, line)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--redact-file %s: %w", f.RedactFile, err)
		}
	}
	for _, p := range f.Redact {
		if p == "" {
			// It was dropped without a word: the user meant a secret.
			return nil, errors.New("--redact '': an empty pattern masks nothing; give the pattern of the secret (a regular expression)")
		}
		if _, err := redact.NewMasker([]string{p}); err != nil {
			return nil, fmt.Errorf("--%w", err) // "--redact pattern ..."
		}
	}
	return append(out, f.Redact...), nil
}

// validate checks the patterns before anything starts.
func (f redactFlags) validate() error {
	_, err := f.patterns()
	return err
}
