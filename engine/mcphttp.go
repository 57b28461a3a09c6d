package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// MCPURLEnv is the variable that gives the agent the URL of the MCP
// server NAME (RunOptions.MCP): JUKEBOX_MCP_URL_NAME, the name upper-cased
// with anything but letters and digits as _.
func MCPURLEnv(name string) string {
	var b strings.Builder
	b.WriteString("JUKEBOX_MCP_URL_")
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// mcpEndpoint is one MCP server a session serves over HTTP.
type mcpEndpoint struct {
	name string
	ln   net.Listener
	srv  *http.Server
	url  string // what the agent is given
}

// startMCP serves the session's HTTP MCP servers: in a recording, a proxy
// to each server of RunOptions.MCP, recording every message; in a replay
// or a fork, each server the tape's run was given, answered from the
// tape. The agent finds each at MCPURLEnv(name).
func (s *session) startMCP() error {
	servers := s.o.MCP
	if _, ok := s.proxy.backend.(*live); !ok {
		servers = map[string]string{}
		if t, _ := s.proxy.control.readTape(); t != nil {
			var err error
			if servers, err = recordedHTTPServers(t); err != nil {
				return err
			}
		}
		for name, raw := range s.o.MCP {
			if _, ok := servers[name]; ok {
				servers[name] = raw // the URL whole, where the tape's lacks its credentials
			}
		}
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := s.serveMCP(name, servers[name]); err != nil {
			s.stopMCP()
			return err
		}
	}
	return nil
}

func (s *session) serveMCP(name, raw string) error {
	up, err := url.Parse(raw)
	if err != nil || up.Host == "" {
		return fmt.Errorf("MCP server %s: %q is not a URL", name, raw)
	}
	c := s.proxy.control
	env := MCPURLEnv(name)
	// The tape keeps the URL without credentials in its query or user
	// part, as an upstream's (token=... was kept); a fork going live is
	// given it whole again (fork --mcp-url).
	o, err := c.openMCP(name, map[string]any{"argv": []string{redact.URL(raw)}, "env": env})
	if err != nil {
		return fmt.Errorf("MCP server %s: %w", name, err)
	}
	c.mcp.markOwn(mcpKey{name, o.session})
	rec := func(m mcp.Message) {
		c.recordMCP(mcp.Wire{Server: name, Session: o.session, Dir: m.Dir, Message: string(m.Raw), Problem: m.Problem, Size: m.Size})
	}
	var h http.Handler
	switch {
	case o.replay && o.liveLater: // a fork: from the tape up to the fork point, live from there
		h = mcp.NewHTTPFork(mcp.ReplayerOf(o.messages), up, rec, c.live, s.mcpHTTPOptions(name, o.session), func() {
			fmt.Fprintf(s.o.Stderr, "jukebox: mcp %s: live from here on\n", name)
		})
	case o.replay:
		// A request the tape does not hold is named (the replay's
		// verdict said "named above" of it, and nothing had).
		replayer := mcp.ReplayerOf(o.messages)
		replayer.Diverged = func(method string, params []byte) {
			fmt.Fprintf(s.o.Stderr, "jukebox: mcp %s\n", mcp.DivergedText(name, method, params))
		}
		h = mcp.NewHTTPReplay(replayer, rec)
	default:
		h = mcp.NewHTTPProxy(up, rec, s.mcpHTTPOptions(name, o.session))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("MCP server %s: %w", name, err)
	}
	e := &mcpEndpoint{name: name, ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second},
		url: "http://" + ln.Addr().String() + up.EscapedPath()}
	go e.srv.Serve(ln)
	s.mcp = append(s.mcp, e)
	return nil
}

// mcpHTTPOptions are the recording proxy's options for an HTTP server:
// under a policy (RunOptions.MCPPolicy), each tools/call is decided as
// jukebox mcp --policy decides a stdio server's, the held ones kept for
// the booth's commit, which runs them over HTTP (runOutbox).
func (s *session) mcpHTTPOptions(name string, session int) mcp.HTTPOptions {
	p := s.o.MCPPolicy
	if p == nil {
		return mcp.HTTPOptions{}
	}
	c := s.proxy.control
	hold := func(tool string, args json.RawMessage, approve bool) (string, error) {
		return c.hold(mcpKey{name, session}, tool, args, approve)
	}
	say := func(msg string) { fmt.Fprintf(s.o.Stderr, "jukebox: mcp %s\n", msg) }
	return mcp.HTTPOptions{ServerSaw: func(m mcp.Message) { p.Learn(name, m) }, Intercept: p.Intercept(name, hold, say)}
}

// mcpAddrs are the MCP endpoints' 127.0.0.1:PORT, for a booth with
// --net none to relay.
func (s *session) mcpAddrs() []string {
	out := make([]string, len(s.mcp))
	for i, e := range s.mcp {
		out[i] = e.ln.Addr().String()
	}
	return out
}

// stopMCP closes the session's MCP endpoints.
func (s *session) stopMCP() {
	for _, e := range s.mcp {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if e.srv.Shutdown(ctx) != nil {
			e.srv.Close()
		}
		cancel()
	}
	s.mcp = nil
}

// recordedHTTPServers are the HTTP MCP servers a recorded run was given
// (their start frames name the variable the agent read), by name.
func recordedHTTPServers(t *tapefmt.Tape) (map[string]string, error) {
	out := map[string]string{}
	for m, err := range mcpFrames(t) {
		if err != nil {
			return nil, err
		}
		if m.Direction != tapefmt.MCPStart {
			continue
		}
		var start struct {
			Argv []string `json:"argv"`
			Env  string   `json:"env"`
		}
		if json.Unmarshal(m.Message, &start) == nil && start.Env != "" && len(start.Argv) == 1 {
			out[m.Server] = start.Argv[0]
		}
	}
	return out, nil
}
