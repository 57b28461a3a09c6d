package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/reqmatch"
)

// Overrides change the requests of a fork.
type Overrides struct {
	Model        string          `json:"model,omitempty"`
	SystemPrompt *string         `json:"system_prompt,omitempty"`
	Temperature  *float64        `json:"temperature,omitempty"`
	Set          []FieldSet      `json:"set,omitempty"`   // applied after the fields above
	Patch        json.RawMessage `json:"patch,omitempty"` // RFC 7396 JSON merge patch, applied last
	// Scope says which calls get the overrides. A fork tape written
	// before scopes were recorded has none, and replays as ScopeOnce.
	Scope Scope `json:"scope,omitempty"`
}

// Scope is how far a fork's overrides reach.
type Scope string

const (
	// ScopeAll applies the overrides to the fork call and to every later
	// call to the same endpoint (the question "what if the rest of this
	// run used model M"). The default for new forks.
	ScopeAll Scope = "all"
	// ScopeOnce applies them to the fork call alone.
	ScopeOnce Scope = "once"
)

// reaches reports whether the overrides apply to a call after the fork
// call.
func (o Overrides) reaches() bool { return o.Scope == ScopeAll }

// FieldSet rewrites one field of a request: Path as reqmatch.ParsePath
// reads it (messages.3.content), Value the JSON it gets.
type FieldSet struct {
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// IsZero reports whether the overrides change nothing.
func (o Overrides) IsZero() bool {
	return o.Model == "" && o.SystemPrompt == nil && o.Temperature == nil && len(o.Set) == 0 && len(o.Patch) == 0
}

// An OverrideError says why the overrides do not apply to the request at
// the fork frame: a field to set that the request does not have, or a
// request that is not a JSON object.
type OverrideError struct {
	Frame uint64 // the llm.request frame of the parent
	Err   error
}

func (e *OverrideError) Error() string {
	return fmt.Sprintf("the request at frame %d: %v", e.Frame, e.Err)
}

func (e *OverrideError) Unwrap() error { return e.Err }

// Apply returns body with the overrides applied; with none, body itself. The system prompt goes
// where each API keeps it: the first system or developer message of an
// OpenAI chat request (inserted first when there is none), "instructions"
// of a Responses request, "system" of an Anthropic request. At the fork
// call (first), a body that is not a JSON object or a field to set that it
// lacks is an error; at a later call, that call is left as it is. A
// multipart form (a file upload) has its form fields set instead
// (applyForm).
func (o Overrides) Apply(provider, path string, body []byte, first bool) ([]byte, error) {
	if o.IsZero() {
		return body, nil // sent as the agent wrote it, byte for byte
	}
	if b := formBoundary(body); b != "" {
		out, err := o.applyForm(body, b)
		if err != nil && !first {
			return body, nil
		}
		return out, err
	}
	v, err := decodeJSON(body)
	req, ok := v.(map[string]any)
	if err != nil || !ok {
		if !first {
			return body, nil
		}
		return nil, fmt.Errorf("not a JSON object: %v", err)
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
	for _, s := range o.Set {
		if err := setField(req, s); err != nil {
			if !first {
				continue
			}
			return nil, err
		}
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

// setField sets the field s names in req; every key and position on the
// way must be there already.
func setField(req map[string]any, s FieldSet) error {
	segs, err := reqmatch.ParsePath(s.Path)
	if err != nil {
		return fmt.Errorf("set %s: %w", s.Path, err)
	}
	value, err := decodeJSON(s.Value)
	if err != nil {
		return fmt.Errorf("set %s: the value: %w", s.Path, err)
	}
	var cur any = req
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return fmt.Errorf("set %s: the request has no %q here (keys: %s)", s.Path, strings.Join(segs[:i+1], "."), keysOf(c))
			}
			if last {
				c[seg] = value
				return nil
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("set %s: %q is not a position in a list of %d", s.Path, seg, len(c))
			}
			if last {
				c[n] = value
				return nil
			}
			cur = c[n]
		default:
			return fmt.Errorf("set %s: %s is not an object or a list", s.Path, strings.Join(segs[:i], "."))
		}
	}
	return nil
}

// keysOf lists an object's keys, sorted.
func keysOf(m map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
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
