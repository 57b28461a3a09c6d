package engine

import (
	"cmp"

	"github.com/jukebox-os/jukebox/llmwire"
)

// decoded is x's request body with its content coding undone and its
// request info (model, stream) read, done once for everyone who needs
// them: the recorder, the breaker, the usage estimate.
type decoded struct {
	done bool
	text []byte
	info llmwire.RequestInfo
}

// decode decodes and parses x's body, the first time only. The model is
// the body's, else the path's (Gemini, Bedrock, an Azure deployment).
func (x *exchange) decode() *decoded {
	if !x.dec.done {
		x.dec.text = llmwire.DecodeBody(x.req.Header, x.body).Text
		x.dec.info = llmwire.ParseRequestInfo(x.dec.text)
		x.dec.info.Model = cmp.Or(x.dec.info.Model, llmwire.PathModel(x.provider.Name, x.path))
		x.dec.done = true
	}
	return &x.dec
}

// llmCall is x's request as llmwire reads its answer (ResponseUsage): the
// provider and path say the answer's format, the body is counted when the
// answer reports no usage.
func (x *exchange) llmCall() llmwire.Call {
	d := x.decode()
	return llmwire.Call{Provider: x.provider.Name, Path: x.path, Model: d.info.Model, Body: d.text}
}
