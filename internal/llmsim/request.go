package llmsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The APIs a rule can be limited to with match.api.
const (
	apiChat      = "chat"      // OpenAI POST /v1/chat/completions
	apiResponses = "responses" // OpenAI POST /v1/responses
	apiMessages  = "messages"  // Anthropic POST /v1/messages
)

// conversation is what the matcher and the templates see of a request,
// whatever API it came through.
type conversation struct {
	api          string
	model        string
	system       string
	user         string // text of the last user message that has text
	tool         string // name of the tool whose result ends the conversation
	toolResult   string // text of that result
	endsWithTool bool
	stream       bool
	includeUsage bool // OpenAI chat: stream_options.include_usage
	inputChars   int  // characters of prompt text, for the token estimate
}

// reqError is a request the real API would refuse with a 400.
type reqError struct {
	msg   string
	param string
	code  string
}

func (e *reqError) Error() string { return e.msg }

func badType(param, want string, got json.RawMessage) *reqError {
	return &reqError{
		msg:   fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", param, want, jsonKind(got)),
		param: param, code: "invalid_type",
	}
}

func missing(param string) *reqError {
	return &reqError{msg: fmt.Sprintf("Missing required parameter: '%s'.", param), param: param, code: "missing_required_parameter"}
}

func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// decodeObject parses body as a JSON object of raw fields.
func decodeObject(body []byte) (map[string]json.RawMessage, *reqError) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, &reqError{msg: "We could not parse the JSON body of your request. " +
			"(HINT: This likely means you aren't using your HTTP library correctly. " +
			"The API expects a JSON payload, but what was sent was not valid JSON.)"}
	}
	return obj, nil
}

// field decodes obj[name] into dst if present; want names the JSON type for
// the error message.
func field(obj map[string]json.RawMessage, name, want string, dst any) (bool, *reqError) {
	raw, ok := obj[name]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return false, badType(name, want, raw)
	}
	return true, nil
}

// commonFields reads model and stream, which every chat-like API shares.
func commonFields(obj map[string]json.RawMessage, c *conversation) *reqError {
	if ok, e := field(obj, "model", "a string", &c.model); e != nil {
		return e
	} else if !ok || c.model == "" {
		return &reqError{msg: "you must provide a model parameter", param: "model"}
	}
	_, e := field(obj, "stream", "a boolean", &c.stream)
	return e
}

// contentText flattens a message content that is either a string or an array
// of parts; it keeps the text of parts that have any ("text", "input_text",
// "output_text") and, for tool results, their nested content.
func contentText(raw json.RawMessage, param string) (string, *reqError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", badType(param, "a string or an array", raw)
		}
		return s, nil
	}
	var parts []struct {
		Type    string          `json:"type"`
		Text    *string         `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badType(param, "a string or an array of objects", raw)
	}
	var texts []string
	for i, p := range parts {
		if p.Type == "" {
			return "", missing(fmt.Sprintf("%s[%d].type", param, i))
		}
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case len(p.Content) > 0:
			t, e := contentText(p.Content, fmt.Sprintf("%s[%d].content", param, i))
			if e != nil {
				return "", e
			}
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// toolCallNames maps tool call ids to tool names as the assistant messages of
// a conversation announce them.
type toolCallNames map[string]string

func (n toolCallNames) name(id string) string {
	if name, ok := n[id]; ok {
		return name
	}
	return ""
}
