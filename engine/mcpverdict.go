package engine

import (
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// mcpVerdict is what a replay's MCP sessions left unreproduced: how many
// requests were answered with an error because the recorded session did
// not hold them, and the recorded sessions ("files#1") no jukebox mcp of
// the replay asked for: their server was not answered from the tape, so
// it may have been started live (a client that did not pass the run's
// variables on, on a system where the run cannot be found otherwise).
func (c *control) mcpVerdict(t *tapefmt.Tape) (missing int, notServed []string, err error) {
	c.mcp.mu.Lock()
	defer c.mcp.mu.Unlock()
	for m, err := range mcpFrames(t) {
		if err != nil {
			return 0, nil, err
		}
		if m.Direction == tapefmt.MCPStart && !c.mcp.served[mcpKey{m.Server, m.Session}] {
			notServed = append(notServed, fmt.Sprintf("%s#%d", m.Server, m.Session))
		}
	}
	return c.mcp.missing, notServed, nil
}
