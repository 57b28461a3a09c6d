package main

import (
	"os"
)

// A ttyGuard holds the settings of the terminal a booth's agent shares
// through its standard streams, taken before the agent starts. The agent
// may leave that terminal raw or without echo; restore puts the settings
// back before the booth asks its question and when the run ends. A nil
// guard (no terminal, or a platform without termios) does nothing.
type ttyGuard struct {
	f     *os.File
	saved *termState
}

// guardTerminal returns a guard for the first of the agent's standard
// streams that is a terminal, or nil.
func guardTerminal(env *Env) *ttyGuard {
	for _, s := range []any{env.Stdin, env.Stdout, env.Stderr} {
		f, ok := s.(*os.File)
		if !ok {
			continue
		}
		if st, err := getTermState(f); err == nil {
			return &ttyGuard{f: f, saved: st}
		}
	}
	return nil
}

// restore puts the terminal's settings back; input not yet read stays.
func (g *ttyGuard) restore() {
	if g != nil {
		setTermState(g.f, g.saved, false)
	}
}

// discardInput throws away what was typed on f's terminal and not yet
// read, leaving its settings as they are.
func discardInput(f *os.File) {
	if st, err := getTermState(f); err == nil {
		setTermState(f, st, true)
	}
}
