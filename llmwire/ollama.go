package llmwire

// Ollama's native API: /api/chat (message.content) and /api/generate
// (response), whole or streamed as newline-delimited JSON whose last
// object (done: true) carries prompt_eval_count and eval_count.

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

type ollamaObject struct {
	Model    string `json:"model"`
	Response string `json:"response"` // /api/generate
	Message  *struct {
		Content string `json:"content"`
	} `json:"message"` // /api/chat
	PromptEval int64 `json:"prompt_eval_count"`
	Eval       int64 `json:"eval_count"`
}

// ollamaUsage reads the model and the counts of the last object.
func ollamaUsage(objs [][]byte) (model string, u tapefmt.Usage) {
	for _, obj := range objs {
		var o ollamaObject
		if json.Unmarshal(obj, &o) != nil {
			continue
		}
		model = cmp.Or(model, o.Model)
		u.Input, u.Output = max(u.Input, o.PromptEval), max(u.Output, o.Eval)
	}
	return model, u
}

// ollamaText joins the answer's pieces.
func ollamaText(objs [][]byte) string {
	var text strings.Builder
	for _, obj := range objs {
		var o ollamaObject
		if json.Unmarshal(obj, &o) != nil {
			continue
		}
		text.WriteString(o.Response)
		if o.Message != nil {
			text.WriteString(o.Message.Content)
		}
	}
	return text.String()
}
