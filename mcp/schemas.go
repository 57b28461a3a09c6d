package mcp

import (
	"encoding/json"
)

// Rewritten is the Problem of a server message jukebox changed before the
// client had it (the tape keeps what the client got, so a replay gives
// the same).
const Rewritten = "rewritten by jukebox: the output schemas of tools the policy holds left out"

// Listing is the policy as it reads a server's tools/list answer (the
// relays' Rewrite): it learns the tools (Learn), and when the policy
// would hold a tool that declares an output schema, it returns the
// answer with that schema left out, else nil (the answer goes on as it
// is). A held call cannot give the structured content a schema promises
// before it runs; with the schema left out of the listing, a client does
// not hold the pending answer to it, and that answer need not be an error
// (which models read as a failure, and retry).
func (p *Policy) Listing(server string, m Message) []byte {
	p.Learn(server, m)
	var msg map[string]json.RawMessage
	if json.Unmarshal(m.Raw, &msg) != nil {
		return nil
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(msg["result"], &result) != nil {
		return nil
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(result["tools"], &tools) != nil {
		return nil
	}
	var hidden []string
	for _, t := range tools {
		var name string
		json.Unmarshal(t["name"], &name)
		if _, has := t["outputSchema"]; !has || name == "" {
			continue
		}
		if d, _ := p.Decide(server, name); d == Outbox || d == Approve {
			delete(t, "outputSchema")
			hidden = append(hidden, name)
		}
	}
	if len(hidden) == 0 {
		return nil
	}
	var err error
	if result["tools"], err = json.Marshal(tools); err != nil {
		return nil
	}
	if msg["result"], err = json.Marshal(result); err != nil {
		return nil
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range hidden {
		p.structured[server][name] = false // the client was not told of a schema
	}
	return out
}
