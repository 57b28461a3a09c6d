package llmsim

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// chatMessage is one entry of an OpenAI chat completions "messages" array.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

var chatRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// parseChat reads an OpenAI chat completions request.
func parseChat(body []byte) (*conversation, *reqError) {
	obj, e := decodeObject(body)
	if e != nil {
		return nil, e
	}
	c := &conversation{api: apiChat}
	if e := commonFields(obj, c); e != nil {
		return nil, e
	}
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if _, e := field(obj, "stream_options", "an object", &so); e != nil {
		return nil, e
	}
	c.includeUsage = so.IncludeUsage
	var raws []json.RawMessage
	if ok, e := field(obj, "messages", "an array", &raws); e != nil {
		return nil, e
	} else if !ok {
		return nil, missing("messages")
	}
	if len(raws) == 0 {
		return nil, &reqError{msg: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
			param: "messages", code: "empty_array"}
	}
	names := toolCallNames{}
	var system []string
	for i, raw := range raws {
		param := fmt.Sprintf("messages[%d]", i)
		var m chatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, badType(param, "an object", raw)
		}
		if !chatRoles[m.Role] {
			return nil, &reqError{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role),
				param: param + ".role", code: "invalid_value"}
		}
		text, e := contentText(m.Content, param+".content")
		if e != nil {
			return nil, e
		}
		c.inputChars += utf8.RuneCountInString(text)
		c.endsWithTool = false
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			c.user = text
		case "assistant":
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Function.Name
				c.inputChars += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
		case "tool":
			if m.ToolCallID == "" {
				return nil, missing(param + ".tool_call_id")
			}
			c.endsWithTool, c.tool, c.toolResult = true, names.name(m.ToolCallID), text
		}
	}
	c.system = strings.Join(system, "\n")
	return c, nil
}

// responsesItem is one entry of an OpenAI Responses API "input" array.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// parseResponses reads an OpenAI Responses API request.
func parseResponses(body []byte) (*conversation, *reqError) {
	obj, e := decodeObject(body)
	if e != nil {
		return nil, e
	}
	c := &conversation{api: apiResponses}
	if e := commonFields(obj, c); e != nil {
		return nil, e
	}
	var system []string
	var instructions string
	if _, e := field(obj, "instructions", "a string", &instructions); e != nil {
		return nil, e
	} else if instructions != "" {
		system = append(system, instructions)
	}
	raw, ok := obj["input"]
	if !ok || string(raw) == "null" {
		return nil, missing("input")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &c.user); err == nil {
		c.inputChars = utf8.RuneCountInString(c.user)
	} else if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badType("input", "a string or an array", raw)
	}
	names := toolCallNames{}
	for i, raw := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it responsesItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, badType(param, "an object", raw)
		}
		c.endsWithTool = false
		switch {
		case it.Type == "function_call":
			names[it.CallID] = it.Name
			c.inputChars += len(it.Name) + len(it.Arguments)
		case it.Type == "function_call_output":
			out, e := contentText(it.Output, param+".output")
			if e != nil {
				return nil, e
			}
			c.inputChars += utf8.RuneCountInString(out)
			c.endsWithTool, c.tool, c.toolResult = true, names.name(it.CallID), out
		case it.Type == "message" || it.Type == "" && it.Role != "":
			text, e := contentText(it.Content, param+".content")
			if e != nil {
				return nil, e
			}
			c.inputChars += utf8.RuneCountInString(text)
			switch it.Role {
			case "system", "developer":
				system = append(system, text)
			case "user":
				c.user = text
			}
		case it.Type == "":
			return nil, missing(param + ".type")
		}
	}
	c.system = strings.Join(system, "\n")
	return c, nil
}

// anthropicBlock is one content block of an Anthropic message.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// parseMessages reads an Anthropic Messages API request.
func parseMessages(body []byte) (*conversation, *reqError) { return parseAnthropic(body, true) }

// parseMessagesCount reads an Anthropic count_tokens request, which has no
// max_tokens.
func parseMessagesCount(body []byte) (*conversation, *reqError) { return parseAnthropic(body, false) }

func parseAnthropic(body []byte, needMaxTokens bool) (*conversation, *reqError) {
	obj, e := decodeObject(body)
	if e != nil {
		return nil, e
	}
	c := &conversation{api: apiMessages}
	if e := commonFields(obj, c); e != nil {
		return nil, e
	}
	var maxTokens int
	if ok, e := field(obj, "max_tokens", "an integer", &maxTokens); e != nil {
		return nil, e
	} else if !ok && needMaxTokens {
		return nil, &reqError{msg: "max_tokens: Field required", param: "max_tokens"}
	} else if ok && maxTokens < 1 {
		return nil, &reqError{msg: "max_tokens: Input should be greater than or equal to 1", param: "max_tokens"}
	}
	if raw, ok := obj["system"]; ok {
		if c.system, e = contentText(raw, "system"); e != nil {
			return nil, e
		}
		c.inputChars += utf8.RuneCountInString(c.system)
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if ok, e := field(obj, "messages", "a list", &msgs); e != nil {
		return nil, e
	} else if !ok {
		return nil, &reqError{msg: "messages: Field required", param: "messages"}
	}
	if len(msgs) == 0 {
		return nil, &reqError{msg: "messages: at least one message is required", param: "messages"}
	}
	names := toolCallNames{}
	for i, m := range msgs {
		param := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, &reqError{msg: fmt.Sprintf("%s.role: Input should be 'user' or 'assistant'", param), param: param + ".role"}
		}
		if e := c.addAnthropicMessage(m.Role, m.Content, param, names); e != nil {
			return nil, e
		}
	}
	return c, nil
}

func (c *conversation) addAnthropicMessage(role string, raw json.RawMessage, param string, names toolCallNames) *reqError {
	c.endsWithTool = false
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		c.inputChars += utf8.RuneCountInString(s)
		if role == "user" {
			c.user = s
		}
		return nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return &reqError{msg: param + ".content: Input should be a valid list", param: param + ".content"}
	}
	var texts []string
	for j, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			names[b.ID] = b.Name
			c.inputChars += len(b.Name) + len(b.Input)
		case "tool_result":
			out, e := contentText(b.Content, fmt.Sprintf("%s.content.%d.content", param, j))
			if e != nil {
				return e
			}
			c.inputChars += utf8.RuneCountInString(out)
			c.endsWithTool, c.tool, c.toolResult = true, names.name(b.ToolUseID), out
		case "":
			return &reqError{msg: fmt.Sprintf("%s.content.%d.type: Field required", param, j)}
		}
	}
	text := strings.Join(texts, "\n")
	c.inputChars += utf8.RuneCountInString(text)
	if role == "user" && len(texts) > 0 {
		c.user = text
	}
	return nil
}
