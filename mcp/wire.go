package mcp

import "github.com/jukebox-os/jukebox/tapefmt"

// Wire is an MCP message as jukebox's parts pass it to each other (the
// control API, a recorded session handed to a replay): the line as text.
type Wire struct {
	Server  string               `json:"server,omitempty"`
	Session int                  `json:"session,omitempty"`
	Dir     tapefmt.MCPDirection `json:"dir"`
	Message string               `json:"message"`
	Problem string               `json:"problem,omitempty"`
	Size    int                  `json:"size,omitempty"`
}

// ReplayerOf is a Replayer over a recorded session in wire form.
func ReplayerOf(session []Wire) *Replayer {
	msgs := make([]Message, len(session))
	for i, w := range session {
		msgs[i] = Message{Dir: w.Dir, Raw: []byte(w.Message)}
	}
	return NewReplayer(msgs)
}
