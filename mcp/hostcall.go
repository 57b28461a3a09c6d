package mcp

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrNotHeld: the user's policy does not let a call the booth was asked
// to hold run on the host at the commit.
var ErrNotHeld = errors.New("refused by the user's --mcp-policy")

// HostCall decides whether a tools/call of tool on server, which the
// booth is asked to hold, may run on the host once the booth commits:
// p is the user's policy, read outside the booth (nil: there is none).
// It may when p holds the tool (outbox or approve) and the session
// reaches the server p means: one jukebox itself serves (own: record
// --mcp-url), or one whose command line (argv; a URL for jukebox mcp
// --url) is exactly the server's command (or url) in p. Whatever chose
// argv, the policy, its decision and the tool inside the booth counts for
// nothing here. approve: the policy asks for a person's yes. The error
// (ErrNotHeld) says why not, for the agent.
func (p *Policy) HostCall(server, tool string, argv []string, own bool) (approve bool, err error) {
	if p == nil {
		return false, fmt.Errorf("%w: this run has none, and without one no call is held to run outside the booth", ErrNotHeld)
	}
	d, why := p.Decide(server, tool)
	if d != Outbox && d != Approve {
		return false, fmt.Errorf("%w: it does not hold %s of server %s for the commit (%s: %s)", ErrNotHeld, strconv.Quote(tool), strconv.Quote(server), d, why)
	}
	if !own && !p.Servers[server].runs(argv) {
		return false, fmt.Errorf("%w: it names no command (or url) for server %s that is this session's, %s",
			ErrNotHeld, strconv.Quote(server), quoteArgv(argv))
	}
	return d == Approve, nil
}

// runs reports whether argv is the server's command line (or its URL) as
// the policy names it.
func (s ServerPolicy) runs(argv []string) bool {
	switch {
	case len(s.Command) > 0:
		return slices.Equal(s.Command, argv)
	case s.URL != "":
		return len(argv) == 1 && argv[0] == s.URL
	}
	return false
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}
