package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Overrides change the request at a fork frame.
type Overrides struct {
	Model        string          `json:"model,omitempty"`
	SystemPrompt *string         `json:"system_prompt,omitempty"`
	Temperature  *float64        `json:"temperature,omitempty"`
	Patch        json.RawMessage `json:"patch,omitempty"` // RFC 7396 JSON merge patch, applied last
}

// IsZero reports whether the overrides change nothing.
func (o Overrides) IsZero() bool {
	return o.Model == "" && o.SystemPrompt == nil && o.Temperature == nil && len(o.Patch) == 0
}

// Apply returns body with the overrides applied; with none, body itself. The system prompt goes
// where each API keeps it: the first system or developer message of an
// OpenAI chat request (inserted first when there is none), "instructions"
// of a Responses request, "system" of an Anthropic request.
func (o Overrides) Apply(provider, path string, body []byte) ([]byte, error) {
	if o.IsZero() {
		return body, nil // sent as the agent wrote it, byte for byte
	}
	v, err := decodeJSON(body)
	req, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("the request at the fork frame is not a JSON object: %v", err)
	}
	if o.Model != "" {
		req["model"] = o.Model
	}
	if o.Temperature != nil {
		req["temperature"] = *o.Temperature
	}
	if o.SystemPrompt != nil {
		setSystemPrompt(req, provider, path, *o.SystemPrompt)
	}
	out, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(o.Patch) > 0 {
		return mergePatch(out, o.Patch)
	}
	return out, nil
}

func setSystemPrompt(req map[string]any, provider, path, prompt string) {
	switch {
	case provider == "anthropic":
		req["system"] = prompt
	case path == "/v1/responses":
		req["instructions"] = prompt
	default:
		msgs, _ := req["messages"].([]any)
		for _, m := range msgs {
			if mm, ok := m.(map[string]any); ok && (mm["role"] == "system" || mm["role"] == "developer") {
				mm["content"] = prompt
				return
			}
		}
		req["messages"] = append([]any{map[string]any{"role": "system", "content": prompt}}, msgs...)
	}
}

// mergePatch applies an RFC 7396 JSON merge patch to doc.
func mergePatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("merge patch: document: %w", err)
	}
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, fmt.Errorf("merge patch: %w", err)
	}
	return json.Marshal(mergeValue(d, p))
}

// decodeJSON reads one JSON value, keeping numbers as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
		} else {
			tm[k] = mergeValue(tm[k], v)
		}
	}
	return tm
}
