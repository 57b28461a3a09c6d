// Package sandbox is the Shadow Booth: transactions over a workspace whose
// file writes, commands, SQL and tool calls are staged until committed.
package sandbox
