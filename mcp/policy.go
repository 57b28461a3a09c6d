package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// Decision is what becomes of a tools/call in the booth.
type Decision string

// Decisions.
const (
	Run    Decision = "run"    // goes to the server now
	Outbox Decision = "outbox" // held: answered as pending, run when the booth commits
	Refuse Decision = "refuse" // answered with an error, never run
	// Approve holds the call as Outbox does, and runs it at the commit
	// only when a person approved the commit (--commit ask).
	Approve Decision = "approve"
)

// Policy decides each tools/call by server and tool. Annotations from a
// server (readOnlyHint, destructiveHint, idempotentHint, openWorldHint,
// spec 2025-03-26 on) are hints its author wrote, not guarantees, so they
// count only for servers the policy trusts:
//
//	{"default": "run",
//	 "servers": {"slack": {"trust_annotations": true, "default": "outbox",
//	                       "command": ["npx", "-y", "slack-mcp"],
//	                       "tools": {"post_message": "outbox", "delete_channel": "refuse"}}}}
//
// Decisions are run, outbox, approve (an outbox call that needs a
// person's yes at the commit) and refuse. For a call: the tool's own entry; else, for a trusted server, its
// annotations (read-only runs; open-world, which the spec presumes when
// unsaid, goes to the outbox); else the server's default; else the
// policy's; else run.
type Policy struct {
	Default Decision                `json:"default,omitempty"`
	Servers map[string]ServerPolicy `json:"servers,omitempty"`

	mu          sync.Mutex
	annotations map[string]map[string]Annotations // server → tool → what tools/list said
	structured  map[string]map[string]bool        // server → tool → it declares an outputSchema
}

// ServerPolicy is a server's part of a Policy.
//
// A call held for the commit runs on the host, outside the booth: for a
// server the agent started (jukebox mcp in the booth), only when its
// command line is exactly Command (or, for jukebox mcp --url, its URL is
// URL); see HostCall.
type ServerPolicy struct {
	TrustAnnotations bool                `json:"trust_annotations,omitempty"`
	Default          Decision            `json:"default,omitempty"`
	Tools            map[string]Decision `json:"tools,omitempty"`
	Command          []string            `json:"command,omitempty"`
	URL              string              `json:"url,omitempty"`
}

// Annotations are a tool's hints (nil: not said).
type Annotations struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// LoadPolicy reads a policy file; an unknown key or decision is an error
// naming the file.
func LoadPolicy(path string) (*Policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, raw)
}

// ParsePolicy reads a policy from raw, its JSON; path names where it came
// from in errors.
func ParsePolicy(path string, raw []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	check := func(where string, d Decision) error {
		switch d {
		case "", Run, Outbox, Refuse, Approve:
			return nil
		}
		return fmt.Errorf("%s: %s: %q: want run, outbox, approve or refuse", path, where, d)
	}
	if err := check("default", p.Default); err != nil {
		return nil, err
	}
	for name, s := range p.Servers {
		if err := check("servers."+name+".default", s.Default); err != nil {
			return nil, err
		}
		if s.URL != "" && len(s.Command) > 0 {
			return nil, fmt.Errorf("%s: servers.%s: command and url: give one (command for a stdio server, url for one over HTTP)", path, name)
		}
		for tool, d := range s.Tools {
			if err := check("servers."+name+".tools."+tool, d); err != nil {
				return nil, err
			}
		}
	}
	return &p, nil
}

// Learn takes the tools a server listed (a tools/list result), for their
// annotations.
func (p *Policy) Learn(server string, m Message) {
	var res struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				Annotations  Annotations     `json:"annotations"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(m.Raw, &res) != nil || len(res.Result.Tools) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.annotations == nil {
		p.annotations = map[string]map[string]Annotations{}
	}
	if p.annotations[server] == nil {
		p.annotations[server] = map[string]Annotations{}
	}
	if p.structured == nil {
		p.structured = map[string]map[string]bool{}
	}
	if p.structured[server] == nil {
		p.structured[server] = map[string]bool{}
	}
	for _, t := range res.Result.Tools {
		p.annotations[server][t.Name] = t.Annotations
		p.structured[server][t.Name] = len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null"
	}
}

// Structured reports whether the server listed tool with an output schema:
// a result of it must then carry structured content.
func (p *Policy) Structured(server, tool string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.structured[server][tool]
}

// Decide is the decision for a call of tool on server, and why.
func (p *Policy) Decide(server, tool string) (Decision, string) {
	s := p.Servers[server]
	if d, ok := s.Tools[tool]; ok {
		return d, "the policy names the tool"
	}
	if s.TrustAnnotations {
		p.mu.Lock()
		a, known := p.annotations[server][tool]
		p.mu.Unlock()
		switch {
		case known && a.ReadOnly != nil && *a.ReadOnly:
			return Run, "read-only, by the server's annotations"
		case known && (a.OpenWorld == nil || *a.OpenWorld):
			return Outbox, "open-world and not read-only, by the server's annotations"
		case known:
			return Run, "closed-world, by the server's annotations"
		}
	}
	if s.Default != "" {
		return s.Default, "the server's default"
	}
	if p.Default != "" {
		return p.Default, "the policy's default"
	}
	return Run, "no rule says otherwise"
}

// ToolCall reads a tools/call request: its tool and arguments.
func ToolCall(raw []byte) (id json.RawMessage, tool string, args json.RawMessage, ok bool) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != "tools/call" || len(req.ID) == 0 {
		return nil, "", nil, false
	}
	return req.ID, req.Params.Name, req.Params.Arguments, true
}

// Hold puts a call in the booth's outbox and returns its idempotency key;
// approve says only a person's yes at the commit may run it. An error
// (no booth, no outbox) means the call cannot be held.
type Hold func(tool string, args json.RawMessage, approve bool) (key string, err error)

// Intercept is the policy as a relay applies it to server's tools/call
// requests (RelayOptions.Intercept, HTTPOptions.Intercept): a refused call
// is answered with an error, a held one goes to hold and is answered as
// pending; every other message goes on. When a call cannot be held (not a
// booth run), it runs now and note is told once; when the user's policy
// refuses to hold it (ErrNotHeld), it is refused. say tells what was
// decided, for the user.
//
// A call held again with the same tool and arguments (a model retrying a
// call whose answer it read as a failure) is the call already held: it is
// answered with the same idempotency key and not held twice, so it runs
// once at the commit.
func (p *Policy) Intercept(server string, hold Hold, say func(string)) func(Message) []byte {
	var noted sync.Once
	var mu sync.Mutex
	held := map[string]string{} // tool and canonical arguments: idempotency key
	return func(m Message) []byte {
		id, tool, args, ok := ToolCall(m.Raw)
		if !ok {
			return nil
		}
		same := tool + "\x00" + Canonical(args)
		mu.Lock()
		key, again := held[same]
		mu.Unlock()
		if again {
			say(fmt.Sprintf("%s: %s asked again with the same arguments: the call already held (%s), held once", server, tool, key))
			return Pending(id, tool, key, p.Structured(server, tool))
		}
		d, why := p.Decide(server, tool)
		switch d {
		case Refuse:
			say(fmt.Sprintf("%s: refused %s (%s)", server, tool, why))
			return Refused(id, tool, why)
		case Outbox, Approve:
			key, err := hold(tool, args, d == Approve)
			if errors.Is(err, ErrNotHeld) { // the user's policy, outside the booth, said no
				say(fmt.Sprintf("%s: refused %s: %v", server, tool, err))
				return Refused(id, tool, err.Error())
			}
			if err != nil {
				noted.Do(func() {
					say(fmt.Sprintf("%s: the policy holds %s for the commit, but %v: calls run now", server, tool, err))
				})
				return nil
			}
			mu.Lock()
			held[same] = key
			mu.Unlock()
			say(fmt.Sprintf("%s: %s held in the outbox until the commit (%s)", server, tool, why))
			return Pending(id, tool, key, p.Structured(server, tool))
		}
		return nil
	}
}

// PolicyAnswer is the Problem of a message jukebox answered for the
// server by its policy (held or refused), on the tape.
const PolicyAnswer = "answered by jukebox: the policy"

// Pending is the answer to a call held for the outbox: a tool result that
// says so, with its idempotency key. A tool whose listing still declared
// an output schema to the client (Listing could not leave it out: the
// listing was not seen, or came as an event stream) promises structured
// content jukebox cannot give before it runs: its result is then marked
// isError, which clients do not hold to the schema.
func Pending(id json.RawMessage, tool, key string, structured bool) []byte {
	text, _ := json.Marshal(fmt.Sprintf("jukebox: %s is held in the booth's outbox; it runs when the booth commits (idempotency key %s), and never if it rolls back", tool, key))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}],"isError":%t,"_meta":{"io.jukebox/outbox":true,"io.jukebox/idempotency-key":%q}}}`, id, text, structured, key)
}

// Refused is the answer to a call the policy refuses.
func Refused(id json.RawMessage, tool, why string) []byte {
	msg, _ := json.Marshal(fmt.Sprintf("jukebox: the booth's policy refuses %s (%s)", tool, why))
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":%s}}`, id, msg)
}
