package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// WrapResult says what Wrap did to each server of a config.
type WrapResult struct {
	Wrapped []string          // servers now started through jukebox mcp
	Already []string          // servers that were already
	Skipped map[string]string // servers left as they were, and why
}

// Wrap rewrites an MCP servers config (Claude Desktop, Cursor and the
// Agents SDKs keep servers under "mcpServers", VS Code under "servers") so
// that every stdio server is started through `jukebox mcp`: its command
// becomes jukebox, its args ["mcp", "--name", NAME, "--", COMMAND,
// ARGS...]. Every other key, and every other field of a server (env, cwd,
// type), is kept as it was. A server with a URL (HTTP or SSE) is left
// alone and listed in Skipped (jukebox mcp --url, or record --mcp-url,
// records it: a client config names its URL, not a command to wrap). A
// config whose servers object is empty is an error: nothing to wrap.
// Wrapping twice changes nothing.
func Wrap(config []byte, jukebox string) ([]byte, WrapResult, error) {
	res := WrapResult{Skipped: map[string]string{}}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, res, fmt.Errorf("not a JSON object: %w", err)
	}
	key := ""
	for _, k := range []string{"mcpServers", "servers"} {
		if _, ok := doc[k]; ok {
			key = k
			break
		}
	}
	if key == "" {
		return nil, res, fmt.Errorf(`no "mcpServers" (or VS Code's "servers") object`)
	}
	var servers map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc[key], &servers); err != nil {
		return nil, res, fmt.Errorf("%s: %w", key, err)
	}
	if len(servers) == 0 {
		return nil, res, fmt.Errorf("%s holds no server", key)
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := servers[name]
		var command string
		if raw, ok := s["command"]; !ok || json.Unmarshal(raw, &command) != nil || command == "" {
			if _, url := s["url"]; url {
				res.Skipped[name] = "a server reached by URL: record it with jukebox record --mcp-url NAME=URL, or point the client at jukebox mcp --url URL (docs/mcp.md)"
			} else {
				res.Skipped[name] = "no command"
			}
			continue
		}
		var args []string
		if raw, ok := s["args"]; ok {
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, res, fmt.Errorf("%s.%s.args: %w", key, name, err)
			}
		}
		if len(args) > 0 && args[0] == "mcp" && command == jukebox {
			res.Already = append(res.Already, name)
			continue
		}
		wrapped := append([]string{"mcp", "--name", name, "--", command}, args...)
		s["command"], _ = json.Marshal(jukebox)
		s["args"], _ = json.Marshal(wrapped)
		res.Wrapped = append(res.Wrapped, name)
	}
	var err error
	if doc[key], err = json.Marshal(servers); err != nil {
		return nil, res, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, res, err
	}
	return buf.Bytes(), res, nil
}
