package redact

import (
	"encoding/json"
	"slices"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Filter is the tape writer's filter (tapefmt.Options.Filter) that keeps
// secrets off a tape: it drops credential headers, query parameters and
// environment variables, replaces credentials in the command line and the
// environment values kept, and masks what the Masker's patterns match.
type Filter struct {
	mask *Masker
}

// NewFilter is the filter that drops credentials and masks with m (nil:
// credentials only).
func NewFilter(m *Masker) *Filter { return &Filter{mask: m} }

// Payload returns p without its secrets.
func (f *Filter) Payload(p tapefmt.Payload) tapefmt.Payload {
	switch v := p.(type) {
	case tapefmt.RunStart:
		p = runStart(v)
	case tapefmt.LLMRequest:
		v.Header, v.Query = Header(v.Header), Query(v.Query)
		p = v
	case tapefmt.HTTPRequest:
		v.Header, v.Query = Header(v.Header), Query(v.Query)
		p = v
	case tapefmt.HTTPResponse:
		v.Header = Header(v.Header)
		p = v
	case tapefmt.LLMResponse:
		v.Header = Header(v.Header)
		p = v
	}
	return f.mask.payload(p)
}

// Blob returns data masked.
func (f *Filter) Blob(data []byte) []byte { return f.mask.Mask(data) }

// Stream returns a streamed body masked, with its chunk table.
func (f *Filter) Stream(data []byte, chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	return f.mask.Stream(data, chunks)
}

// runStart drops the credentials of a run's command, environment and
// upstreams.
func runStart(p tapefmt.RunStart) tapefmt.RunStart {
	p.Env = Env(p.Env)
	for k, v := range p.Env { // a copy: Env made it
		p.Env[k] = Text(v)
	}
	p.Argv = Argv(p.Argv)
	if p.Upstream != nil {
		ups := make(map[string]string, len(p.Upstream))
		for k, v := range p.Upstream {
			ups[k] = URL(v)
		}
		p.Upstream = ups
	}
	return p
}

// payload masks the fields of p that hold what the agent or its tools
// said; bodies are masked as blobs (PutBlob).
func (m *Masker) payload(p tapefmt.Payload) tapefmt.Payload {
	switch v := p.(type) {
	case tapefmt.Output:
		v.Data = tapefmt.Bytes(m.Mask(v.Data))
		return v
	case tapefmt.ToolCall:
		v.Args = json.RawMessage(m.Mask(v.Args))
		return v
	case tapefmt.ToolResult:
		v.Result = json.RawMessage(m.Mask(v.Result))
		return v
	case tapefmt.MCPMessage:
		v.Message = json.RawMessage(m.Mask(v.Message))
		return v
	case tapefmt.TxCommit:
		v.SQL = m.sql(v.SQL)
		return v
	case tapefmt.TxRollback:
		v.SQL = m.sql(v.SQL)
		return v
	case tapefmt.RunStart:
		// The command and its environment need not keep their length:
		// a match becomes Redacted, so that replay can tell the recorded
		// command cannot be run again as it was (RedactedArg).
		v.Argv = slices.Clone(v.Argv)
		for i, a := range v.Argv {
			v.Argv[i] = m.replace(a)
		}
		env := make(map[string]string, len(v.Env))
		for k, e := range v.Env {
			env[k] = m.replace(e)
		}
		v.Env, v.Redact = env, m.Patterns()
		return v
	}
	return p
}
