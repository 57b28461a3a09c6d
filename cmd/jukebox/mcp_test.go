package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMcpWrap: jukebox mcp wrap prints a config whose stdio servers start
// through jukebox mcp, writes it over the file with -i (keeping the old
// one), and refuses a file with no servers (exit 2).
func TestMcpWrap(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	orig := `{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`
	must(t, os.WriteFile(cfg, []byte(orig), 0o600))
	out, errs := wantCode(t, ExitOK, "mcp", "wrap", "--jukebox", "/opt/jukebox", cfg)
	if !strings.Contains(out, `"/opt/jukebox"`) || !strings.Contains(out, `"--name",`) || !strings.Contains(errs, "files: through jukebox mcp") {
		t.Errorf("wrap:\n%s\n%s", out, errs)
	}
	wantCode(t, ExitOK, "mcp", "wrap", "-i", "--jukebox", "/opt/jukebox", cfg)
	now, _ := os.ReadFile(cfg)
	kept, _ := os.ReadFile(cfg + ".orig")
	if string(now) != out || string(kept) != orig {
		t.Errorf("-i wrote:\n%s\nkept:\n%s", now, kept)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
		t.Errorf("-i changed the mode to %v", fi.Mode().Perm())
	}
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`{"theme": "dark"}`), 0o644))
	if _, errs := wantCode(t, ExitUsage, "mcp", "wrap", bad); !strings.Contains(errs, `no "mcpServers"`) {
		t.Errorf("a file with no servers: %s", errs)
	}
}
