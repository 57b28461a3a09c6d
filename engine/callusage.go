package engine

import (
	"cmp"

	"github.com/jukebox-os/jukebox/llmwire"
)

// llmCall is x's request as llmwire reads its answer (ResponseUsage): the
// provider and path say the answer's format, the body is counted when the
// answer reports no usage.
func (x *exchange) llmCall() llmwire.Call {
	text := llmwire.DecodeBody(x.req.Header, x.body).Text
	return llmwire.Call{Provider: x.provider.Name, Path: x.path,
		Model: cmp.Or(llmwire.ParseRequestInfo(text).Model, llmwire.PathModel(x.provider.Name, x.path)), Body: text}
}
