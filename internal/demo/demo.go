// Package demo bundles the offline demo: a stdlib-only Python agent that
// calls the chat completions API with tools and writes files, run against
// the scripted model by `jukebox demo` and by the tests.
package demo

import (
	_ "embed"
	"os"
	"path/filepath"
)

// agentPy is the source of the demo agent (agent.py beside this file). It
// reads OPENAI_BASE_URL, OPENAI_API_KEY and AGENT_MODEL, makes a plain and a
// streamed call, then runs a tool loop that writes poem.txt in its working
// directory, reads it back and counts its lines.
//
//go:embed agent.py
var agentPy []byte

// WriteAgent writes the agent into dir as agent.py and returns its path.
func WriteAgent(dir string) (string, error) {
	path := filepath.Join(dir, "agent.py")
	return path, os.WriteFile(path, agentPy, 0o755)
}
