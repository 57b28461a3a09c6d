package redact

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Filter is the tape writer's filter (tapefmt.Options.Filter) that keeps
// secrets off a tape: it drops credential headers, query parameters and
// environment variables, replaces credentials in the command line and the
// environment values kept, and masks what the Masker's patterns match.
type Filter struct {
	mask *Masker
	mu   sync.Mutex
	// sizes are the lengths of the blobs it changed, by their hash as
	// stored: a frame naming one gives that size, not the one sent.
	sizes map[tapefmt.Hash]int64
}

// NewFilter is the filter that drops credentials and masks with m (nil:
// credentials only).
func NewFilter(m *Masker) *Filter { return &Filter{mask: m, sizes: map[tapefmt.Hash]int64{}} }

// Payload returns p without its secrets.
func (f *Filter) Payload(p tapefmt.Payload) tapefmt.Payload {
	switch v := p.(type) {
	case tapefmt.RunStart:
		p = runStart(v)
	case tapefmt.LLMRequest:
		v.Header, v.Query, v.Size = f.header(v.Header), f.mask.MaskQuery(Query(v.Query)), f.size(v.Body, v.Size)
		p = v
	case tapefmt.HTTPRequest:
		v.Header, v.Query, v.Size = f.header(v.Header), f.mask.MaskQuery(Query(v.Query)), f.size(v.Body, v.Size)
		p = v
	case tapefmt.HTTPResponse:
		v.Header, v.Size = f.header(v.Header), f.size(v.Body, v.Size)
		p = v
	case tapefmt.LLMResponse:
		v.Header, v.Size = f.header(v.Header), f.size(v.Body, v.Size)
		p = v
	}
	return f.mask.payload(p)
}

// header is h without the headers that may carry secrets (Header), the
// values of the others masked: a token of a known format, or what the
// user's patterns match, in a header of any name.
func (f *Filter) header(h http.Header) http.Header {
	h = Header(h) // a copy
	f.mask.MaskHeader(h)
	return h
}

// Blob returns data masked.
func (f *Filter) Blob(data []byte) []byte { return f.changed(data, f.mask.Mask(data)) }

// Stream returns a streamed body masked, with its chunk table.
func (f *Filter) Stream(data []byte, chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	out, chunks := f.mask.Stream(data, chunks)
	return f.changed(data, out), chunks
}

// NewStream starts the scan of a streamed body as it arrives
// (tapefmt.Writer.NewStreamScan): its Finish is Stream.
func (f *Filter) NewStream() tapefmt.StreamScanner { return filterScan{f, f.mask.NewStream()} }

type filterScan struct {
	f    *Filter
	scan *StreamScan
}

func (s filterScan) Write(p []byte) { s.scan.Write(p) }

func (s filterScan) Finish(data []byte, chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	out, chunks := s.scan.Finish(data, chunks)
	return s.f.changed(data, out), chunks
}

// changed notes the length of out when masking changed it.
func (f *Filter) changed(in, out []byte) []byte {
	if len(out) != len(in) {
		f.mu.Lock()
		f.sizes[tapefmt.HashOf(out)] = int64(len(out))
		f.mu.Unlock()
	}
	return out
}

// size is the length of the blob h as stored, when masking changed it,
// else the size given.
func (f *Filter) size(h tapefmt.Hash, given int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.sizes[h]; ok {
		return n
	}
	return given
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
	case tapefmt.Control:
		v.Request, v.Answer = json.RawMessage(m.Mask(v.Request)), json.RawMessage(m.Mask(v.Answer))
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
