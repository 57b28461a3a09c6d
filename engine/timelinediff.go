package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// LoadTimeline opens the tape at path and returns its timeline for
// diffview, named after the file.
func LoadTimeline(path string) (diffview.Timeline, error) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return diffview.Timeline{}, err
	}
	defer t.Close()
	return TimelineOf(t, filepath.Base(path))
}

// TimelineOf turns the frames of a tape into the frames diffview aligns.
//
// Signatures say what a frame is: its kind plus the endpoint (llm.request
// and llm.response), the tool name (tool.call and tool.result), the file path
// (file.change), the MCP server and method, or the agent and role. The model
// is not part of an LLM signature but of the title and body, so a fork that
// changed the model shows as changed pairs, not as a deletion and an
// insertion. Bodies are the text the word diff compares: a request's model,
// parameters, tools and messages as "role: content" lines (OpenAI chat and
// Responses, Anthropic Messages; other bodies raw); a response's assistant
// text and tool calls, assembled from the stream; tool arguments and results
// as indented JSON; file contents.
//
// run.start keeps only the command line (mode and cwd differ between a run
// and its fork). seed, clock, step.commit, marker and unknown kinds are left
// out: they differ on every run or carry no behaviour; the steps are counted
// in Timeline.Steps. tx.begin, tx.commit and tx.rollback are left out too:
// a fork runs in the Shadow Booth by default, so they would set every fork
// apart from its parent, and the file.change frames carry what a transaction
// did. What the agent printed (proc.output) becomes one frame per fd holding
// the whole run's output, placed before run.end: when bytes reach a pipe is
// a race with the model calls around them, so interleaved output frames
// would align differently on every run, while what was printed does not.
func TimelineOf(t *tapefmt.Tape, name string) (diffview.Timeline, error) {
	b := &timelineBuilder{t: t, tl: diffview.Timeline{Name: name, Steps: t.Steps(), TapeFrames: t.Len()},
		calls: map[uint64]*tapefmt.LLMRequest{}, tools: map[string]string{}, outputs: map[int]*diffview.Frame{}}
	for f, err := range t.All() {
		if err != nil {
			return b.tl, err
		}
		b.tl.Duration = max(b.tl.Duration, f.Time)
		p, err := f.Decode()
		if err != nil {
			return b.tl, err
		}
		if err := b.add(f, p); err != nil {
			return b.tl, fmt.Errorf("frame %d: %w", f.Seq, err)
		}
	}
	b.flushOutput()
	return b.tl, nil
}

type timelineBuilder struct {
	t       *tapefmt.Tape
	tl      diffview.Timeline
	calls   map[uint64]*tapefmt.LLMRequest // by call number, to name responses
	tools   map[string]string              // tool name by call id, to name results
	outputs map[int]*diffview.Frame        // the run's output by fd
}

func (b *timelineBuilder) add(f tapefmt.Frame, p tapefmt.Payload) error {
	if o, ok := p.(*tapefmt.Output); ok {
		b.output(f, o)
		return nil
	}
	fr := diffview.Frame{Seq: int(f.Seq), Kind: f.Kind.String(), Time: f.Time, Title: Describe(p)}
	var err error
	switch p := p.(type) {
	case *tapefmt.RunStart:
		fr.Signature, fr.Title = "run.start", "start "+strings.Join(p.Argv, " ")
	case *tapefmt.LLMRequest:
		err = b.request(&fr, p)
	case *tapefmt.LLMResponse:
		err = b.response(&fr, p)
	case *tapefmt.ToolCall:
		b.tools[p.ID] = p.Name
		fr.Signature, fr.Title, fr.Body = "tool.call "+p.Name, p.Name+" "+oneLine(string(p.Args), 80), indentJSON(p.Args)
	case *tapefmt.ToolResult:
		err = b.toolResult(&fr, p)
	case *tapefmt.MCPMessage:
		err = b.mcp(&fr, p)
	case *tapefmt.FileChange:
		err = b.file(&fr, p)
	case *tapefmt.AgentTurn:
		fr.Signature, fr.Title, fr.Body = "agent.turn "+p.Agent+" "+p.Role, oneLine(p.Role+": "+p.Text, 80), p.Text
	case *tapefmt.BreakerTrip, *tapefmt.RunEnd:
		fr.Signature = fr.Kind
	default:
		return nil
	}
	b.tl.Frames = append(b.tl.Frames, fr)
	return err
}

// output adds a proc.output frame's bytes to the run's output on its fd.
func (b *timelineBuilder) output(f tapefmt.Frame, o *tapefmt.Output) {
	fr, ok := b.outputs[o.Fd]
	if !ok {
		fr = &diffview.Frame{Seq: int(f.Seq), Kind: f.Kind.String(), Time: f.Time, Signature: "proc.output " + fdName(o.Fd)}
		b.outputs[o.Fd] = fr
	}
	fr.Body += string(o.Data)
}

// flushOutput places the output frames, in fd order, before a final run.end.
func (b *timelineBuilder) flushOutput() {
	at := len(b.tl.Frames)
	if at > 0 && b.tl.Frames[at-1].Kind == tapefmt.KindRunEnd.String() {
		at--
	}
	var outs []diffview.Frame
	for _, fd := range slices.Sorted(maps.Keys(b.outputs)) {
		o := b.outputs[fd]
		lines, unit := strings.Count(strings.TrimSuffix(o.Body, "\n"), "\n")+1, "lines"
		if lines == 1 {
			unit = "line"
		}
		o.Title = fmt.Sprintf("%s, %d %s: %s", fdName(fd), lines, unit, oneLine(o.Body, 60))
		outs = append(outs, *o)
	}
	b.tl.Frames = slices.Insert(b.tl.Frames, at, outs...)
}

func fdName(fd int) string {
	switch fd {
	case 1:
		return "stdout"
	case 2:
		return "stderr"
	}
	return fmt.Sprintf("fd%d", fd)
}

func (b *timelineBuilder) request(fr *diffview.Frame, p *tapefmt.LLMRequest) error {
	b.calls[p.Call] = p
	fr.Signature = "llm.request " + p.Method + " " + p.Path
	fr.Title = strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Method, p.Path, p.Model))
	if p.Stream {
		fr.Title += " stream"
	}
	body, err := b.blob(p.Body)
	if err != nil {
		return err
	}
	fr.Body = requestText(body)
	return nil
}

func (b *timelineBuilder) response(fr *diffview.Frame, p *tapefmt.LLMResponse) error {
	model, path := p.Model, "?"
	if req := b.calls[p.Call]; req != nil {
		path = req.Path
		if model == "" {
			model = req.Model
		}
	}
	body, err := b.blob(p.Body)
	if err != nil {
		return err
	}
	u := p.Usage
	if u == (tapefmt.Usage{}) && len(body) > 0 {
		_, u = ExtractUsage(body)
	}
	fr.Signature = "llm.response " + path
	fr.Tokens = u.Total()
	fr.Cost, _ = breaker.Cost(model, u.Input, u.Cached, u.Output)
	fr.Latency = time.Duration(max(p.Elapsed, p.Latency))
	fr.Title = fmt.Sprintf("%d %s", p.Status, model)
	if u.Total() > 0 {
		fr.Title += fmt.Sprintf(" · %d→%d tok", u.Input, u.Output)
	}
	switch {
	case p.Error != "":
		fr.Title, fr.Body = "error: "+oneLine(p.Error, 80), p.Error
	case p.Status/100 != 2:
		fr.Body = string(body)
	default:
		fr.Body = responseText(body)
	}
	return nil
}

func (b *timelineBuilder) toolResult(fr *diffview.Frame, p *tapefmt.ToolResult) error {
	fr.Signature = "tool.result " + b.tools[p.ID]
	fr.Latency = time.Duration(p.Elapsed)
	raw := []byte(p.Result)
	if !p.Body.IsZero() {
		var err error
		if raw, err = b.blob(p.Body); err != nil {
			return err
		}
	}
	fr.Body = jsonText(raw)
	fr.Title = "→ " + oneLine(fr.Body, 80)
	if p.IsError {
		fr.Title += " (error)"
	}
	return nil
}

func (b *timelineBuilder) mcp(fr *diffview.Frame, p *tapefmt.MCPMessage) error {
	raw := []byte(p.Message)
	if !p.Body.IsZero() {
		var err error
		if raw, err = b.blob(p.Body); err != nil {
			return err
		}
	}
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(raw, &m) // a message without a method is a result
	method := m.Method
	if method == "" {
		method = "result"
	}
	fr.Signature = "mcp.message " + p.Server + " " + p.Direction + " " + method
	fr.Title = p.Server + " " + p.Direction + " " + method
	fr.Body = indentJSON(raw)
	return nil
}

func (b *timelineBuilder) file(fr *diffview.Frame, p *tapefmt.FileChange) error {
	fr.Signature = "file.change " + p.Path
	fr.Title = fmt.Sprintf("%s %s", p.Op, p.Path)
	switch {
	case p.Target != "":
		fr.Body = "→ " + p.Target
	case !p.Body.IsZero():
		body, err := b.blob(p.Body)
		if err != nil {
			return err
		}
		fr.Title += fmt.Sprintf(" (%d bytes)", len(body))
		fr.Body = string(body)
		if !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0 {
			fr.Body = fmt.Sprintf("(%d bytes of binary data, blake3 %s)", len(body), p.Body.Short())
		}
	}
	return nil
}

func (b *timelineBuilder) blob(h tapefmt.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	return b.t.Blob(h)
}

// indentJSON pretty-prints JSON so that a word diff reads key by key; text
// that is not JSON is returned as it is.
func indentJSON(raw []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		return string(raw)
	}
	return out.String()
}

// jsonText returns a JSON string's value, or other JSON indented.
func jsonText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return indentJSON(raw)
}

// wireItem is any message, input item, output item or content part of the
// OpenAI chat and Responses APIs and the Anthropic Messages API, as far as
// its text goes.
type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`      // function_call, tool_use, a tool definition
	Arguments string          `json:"arguments"` // function_call
	Input     json.RawMessage `json:"input"`     // tool_use
	Output    json.RawMessage `json:"output"`    // function_call_output
	Index     int             `json:"index"`     // a streamed chat tool call
	// PartialJSON is a piece of an Anthropic tool_use block's input.
	PartialJSON string `json:"partial_json"`
	Function    *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"` // a chat tool call or tool definition
	ToolCalls []wireItem `json:"tool_calls"`
}

// wireRequest is an LLM request body as far as its text goes.
type wireRequest struct {
	Model        string          `json:"model"`
	System       json.RawMessage `json:"system"`       // Anthropic
	Instructions json.RawMessage `json:"instructions"` // Responses
	Messages     []wireItem      `json:"messages"`     // chat, Anthropic
	Input        json.RawMessage `json:"input"`        // Responses: a string or items
	Tools        []wireItem      `json:"tools"`
	// The sampling parameters, named in requestParams.
	Temperature         json.RawMessage `json:"temperature"`
	TopP                json.RawMessage `json:"top_p"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
	MaxOutputTokens     json.RawMessage `json:"max_output_tokens"`
	Reasoning           json.RawMessage `json:"reasoning"`
	ReasoningEffort     json.RawMessage `json:"reasoning_effort"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Seed                json.RawMessage `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
}

// requestParams are the sampling parameters a request body shows, in order.
var requestParams = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens",
	"max_output_tokens", "reasoning", "reasoning_effort", "tool_choice", "response_format", "seed", "stop"}

// param returns the sampling parameter named name (one of requestParams).
func (r *wireRequest) param(name string) json.RawMessage {
	return map[string]json.RawMessage{"temperature": r.Temperature, "top_p": r.TopP, "max_tokens": r.MaxTokens,
		"max_completion_tokens": r.MaxCompletionTokens, "max_output_tokens": r.MaxOutputTokens,
		"reasoning": r.Reasoning, "reasoning_effort": r.ReasoningEffort, "tool_choice": r.ToolChoice,
		"response_format": r.ResponseFormat, "seed": r.Seed, "stop": r.Stop}[name]
}

// params returns the sampling parameters that are set, as "name: value" lines.
func (r *wireRequest) params() string {
	var b strings.Builder
	for _, k := range requestParams {
		if v := r.param(k); len(v) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", k, compactJSON(v))
		}
	}
	return b.String()
}

// requestText renders a request body as model, parameters, tools and one
// "role: content" line per message; a body that is not JSON stays raw.
func requestText(body []byte) string {
	var req wireRequest
	if json.Unmarshal(body, &req) != nil {
		return string(body)
	}
	var b strings.Builder
	if req.Model != "" {
		fmt.Fprintf(&b, "model: %s\n", req.Model)
	}
	b.WriteString(req.params())
	if len(req.Tools) > 0 {
		fmt.Fprintf(&b, "tools: %s\n", toolNames(req.Tools))
	}
	for _, sys := range []json.RawMessage{req.System, req.Instructions} {
		if s := contentText(sys); s != "" {
			fmt.Fprintf(&b, "system: %s\n", s)
		}
	}
	var input string
	if json.Unmarshal(req.Input, &input) == nil {
		req.Messages = append(req.Messages, wireItem{Role: "user", Text: input, Type: "text"})
	} else {
		_ = json.Unmarshal(req.Input, &req.Messages) // absent outside the Responses API
	}
	for _, m := range req.Messages {
		b.WriteString(messageLine(m))
	}
	return b.String()
}

// toolNames lists the names of the tools a request offers.
func toolNames(tools []wireItem) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		if names[i] = t.Name; t.Function != nil {
			names[i] = t.Function.Name
		}
	}
	return strings.Join(names, ", ")
}

// messageLine renders one message or input item as "role: text".
func messageLine(m wireItem) string {
	role := m.Role
	switch {
	case role != "":
	case m.Type == "function_call":
		role = "assistant"
	case m.Type == "function_call_output":
		role = "tool"
	default:
		role = m.Type
	}
	return role + ": " + itemText(m) + "\n"
}

// itemText is the text of a message, item or content part; tool calls show
// as "→ name arguments" and tool results as "← result".
func itemText(it wireItem) string {
	switch it.Type {
	case "function_call":
		return "→ " + it.Name + " " + it.Arguments
	case "tool_use":
		return "→ " + it.Name + " " + compactJSON(it.Input)
	case "function_call_output":
		return "← " + contentText(it.Output)
	case "tool_result":
		return "← " + contentText(it.Content)
	case "text", "input_text", "output_text":
		return it.Text
	case "image_url", "input_image", "image":
		return "[image]"
	}
	parts := []string{}
	if s := contentText(it.Content); s != "" {
		parts = append(parts, s)
	}
	for _, tc := range it.ToolCalls {
		if tc.Function != nil {
			parts = append(parts, "→ "+tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	return strings.Join(parts, "\n")
}

// contentText is the text of a content field: a string, a list of parts,
// or other JSON as it is.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []wireItem
	if json.Unmarshal(raw, &parts) != nil {
		return compactJSON(raw)
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = itemText(p)
	}
	return strings.Join(texts, "\n")
}

func compactJSON(raw []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, raw) != nil {
		return string(raw)
	}
	return out.String()
}

// wireOutput is a whole response body, or one event of a streamed one.
type wireOutput struct {
	Type    string `json:"type"`
	Choices []struct {
		Message *wireItem `json:"message"`
		Delta   *wireItem `json:"delta"`
	} `json:"choices"` // chat
	Output       []wireItem      `json:"output"`        // Responses
	Content      []wireItem      `json:"content"`       // Anthropic
	Response     *wireOutput     `json:"response"`      // Responses events
	Item         *wireItem       `json:"item"`          // Responses output_item.done
	ContentBlock *wireItem       `json:"content_block"` // Anthropic content_block_start
	Delta        json.RawMessage `json:"delta"`         // Responses text delta or Anthropic block delta
	Index        int             `json:"index"`
}

// responseText assembles what the model said: its text, then its tool
// calls, from a whole JSON body or from server-sent events.
func responseText(body []byte) string {
	objs := jsonObjects(body)
	if len(objs) == 0 {
		return string(body)
	}
	var a assembly
	for _, obj := range objs {
		var ev wireOutput
		if json.Unmarshal(obj, &ev) == nil {
			a.add(ev)
		}
	}
	return a.String()
}

// assembly collects a response's text and tool calls (by stream index).
type assembly struct {
	text  strings.Builder
	calls map[int]*wireItem
	order []int
	whole []string // items of a whole body or a Responses response.completed event
}

func (a *assembly) add(ev wireOutput) {
	if ev.Type == "response.completed" && ev.Response != nil {
		ev = *ev.Response
	}
	for _, it := range append(ev.Output, ev.Content...) {
		a.whole = append(a.whole, itemText(it))
	}
	for _, c := range ev.Choices {
		if c.Message != nil {
			a.whole = append(a.whole, itemText(*c.Message))
		}
		if c.Delta == nil {
			continue
		}
		a.text.WriteString(contentText(c.Delta.Content))
		for _, tc := range c.Delta.ToolCalls {
			if tc.Function != nil {
				call := a.call(tc.Index)
				call.Name += tc.Function.Name
				call.Arguments += tc.Function.Arguments
			}
		}
	}
	a.event(ev)
}

// event handles the Responses and Anthropic stream events that carry text.
func (a *assembly) event(ev wireOutput) {
	var delta wireItem
	switch ev.Type {
	case "response.output_text.delta":
		var s string
		_ = json.Unmarshal(ev.Delta, &s)
		a.text.WriteString(s)
	case "response.output_item.done":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			*a.call(len(a.order)) = *ev.Item
		}
	case "content_block_start":
		if ev.ContentBlock != nil && ev.ContentBlock.Type == "tool_use" {
			a.call(ev.Index).Name = ev.ContentBlock.Name
		}
	case "content_block_delta":
		_ = json.Unmarshal(ev.Delta, &delta)
		a.text.WriteString(delta.Text)
		if delta.PartialJSON != "" {
			a.call(ev.Index).Arguments += delta.PartialJSON
		}
	}
}

func (a *assembly) call(i int) *wireItem {
	if a.calls == nil {
		a.calls = map[int]*wireItem{}
	}
	c, ok := a.calls[i]
	if !ok {
		c = &wireItem{}
		a.calls[i], a.order = c, append(a.order, i)
	}
	return c
}

// String is the text, then one "→ name arguments" line per tool call; a
// whole body (or a completed Responses event) wins over streamed deltas.
func (a *assembly) String() string {
	parts := a.whole
	if len(parts) == 0 {
		parts = []string{a.text.String()}
		for _, i := range a.order {
			parts = append(parts, "→ "+a.calls[i].Name+" "+a.calls[i].Arguments)
		}
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}
