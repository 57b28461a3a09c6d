package llmwire

import (
	"bytes"
	"encoding/json"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// wireUsage holds every usage field the OpenAI (chat, responses, embeddings)
// and Anthropic APIs report, so one decode reads them all.
type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheRead        int64 `json:"cache_read_input_tokens"`
	CacheCreation    int64 `json:"cache_creation_input_tokens"`
	PromptDetails    struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputDetails struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	CompletionDetails struct {
		Reasoning int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	OutputDetails struct {
		Reasoning int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// wireObject is a response object or stream event as far as usage goes.
type wireObject struct {
	Model string     `json:"model"`
	Usage *wireUsage `json:"usage"`
}

// wireEvent finds the model and usage at the top level or inside
// "response" (OpenAI Responses events) or "message" (Anthropic message_start).
type wireEvent struct {
	wireObject
	Response *wireObject `json:"response"`
	Message  *wireObject `json:"message"`
}

// ExtractUsage reads the model and token usage from a response body, whole
// JSON or server-sent events. Counts reported more than once in a stream
// (Anthropic sends input at the start and output at the end) are merged by
// taking the largest value of each.
func ExtractUsage(body []byte) (model string, u tapefmt.Usage) {
	return openAIUsage(jsonObjects(body))
}

// openAIUsage is ExtractUsage of a body's objects.
func openAIUsage(objs [][]byte) (model string, u tapefmt.Usage) {
	for _, obj := range objs {
		if model != "" && !mayHoldUsage(obj) {
			continue // nothing left in it to read: most chunks of a stream
		}
		var ev wireEvent
		if json.Unmarshal(obj, &ev) != nil {
			continue
		}
		for _, o := range []*wireObject{&ev.wireObject, ev.Response, ev.Message} {
			if o == nil {
				continue
			}
			if model == "" {
				model = o.Model
			}
			if o.Usage != nil {
				merge(&u, o.Usage)
			}
		}
	}
	return model, u
}

// mayHoldUsage says obj may have a "usage" key: it names one, or holds an
// escape that could spell one.
func mayHoldUsage(obj []byte) bool {
	return bytes.Contains(obj, []byte(`"usage"`)) || bytes.Contains(obj, []byte(`\u`))
}

func merge(u *tapefmt.Usage, w *wireUsage) {
	u.Input = max(u.Input, w.PromptTokens, w.InputTokens)
	u.Output = max(u.Output, w.CompletionTokens, w.OutputTokens)
	u.Cached = max(u.Cached, w.PromptDetails.Cached, w.InputDetails.Cached, w.CacheRead)
	u.Reasoning = max(u.Reasoning, w.CompletionDetails.Reasoning, w.OutputDetails.Reasoning)
	u.CacheWrite = max(u.CacheWrite, w.CacheCreation)
}

// jsonObjects returns the JSON objects in a body: the body itself, each
// object of a JSON array (Gemini's stream without alt=sse) or of
// newline-delimited JSON (Ollama's and Cohere v1's streams), or the data
// of each server-sent event.
func jsonObjects(body []byte) [][]byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return jsonValues(trimmed)
	}
	var out [][]byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) > 0 && data[0] == '{' {
			out = append(out, data)
		}
	}
	return out
}

// jsonValues splits a body that starts with '{' or '[' into its objects:
// one object, the objects of each array, or one per line; what does not
// parse ends the list (a stream cut off mid-object keeps what came before).
func jsonValues(body []byte) [][]byte {
	if body[0] == '{' && json.Valid(body) {
		return [][]byte{body}
	}
	var out [][]byte
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		if len(v) > 0 && v[0] == '[' {
			var items []json.RawMessage
			_ = json.Unmarshal(v, &items) // v is valid JSON: an array of values
			for _, it := range items {
				if len(it) > 0 && it[0] == '{' {
					out = append(out, it)
				}
			}
			continue
		}
		if len(v) > 0 && v[0] == '{' {
			out = append(out, v)
		}
	}
}

// RequestInfo is what the recorder reads from a request body: the model
// asked for and whether the answer is to be streamed.
type RequestInfo struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}
