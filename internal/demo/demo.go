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

// filesAgentPy is a test agent that writes, edits, renames, deletes and
// links files between three model calls, printing a manifest of its
// folder before each (files_agent.py beside this file). Its folder must
// hold keep.txt and mode.sh when it starts.
//
//go:embed files_agent.py
var filesAgentPy []byte

// WriteFilesAgent writes the files agent into dir as files_agent.py,
// with the keep.txt, mode.sh and sub/ it expects, and returns its path.
func WriteFilesAgent(dir string) (string, error) {
	for name, content := range map[string]string{"keep.txt": "kept until call 2\n", "mode.sh": "#!/bin/sh\n", "sub/deep.txt": "deep\n"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "files_agent.py")
	return path, os.WriteFile(path, filesAgentPy, 0o755)
}
