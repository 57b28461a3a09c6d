package export

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// span is one span as the converter makes it, before the SDK sees it.
type span struct {
	name       string
	kind       trace.SpanKind
	id, parent trace.SpanID // a zero parent: the trace's root
	start, end time.Time
	attrs      []attribute.KeyValue
	events     []event
	err        string // set: the span failed, and this says how
}

// event is a timed note on a span.
type event struct {
	name  string
	at    time.Time
	attrs []attribute.KeyValue
}

// measure is one model call as the metrics count it.
type measure struct {
	op, provider, requestModel, responseModel string
	errType                                   string // set when the call failed
	input, output                             int64
	usage                                     bool    // the call reported its tokens
	seconds                                   float64 // the whole call
	streamed                                  bool
	firstChunk                                float64 // streamed calls: seconds to the first chunk
}

// Options say what an export writes.
type Options struct {
	// IncludeContent adds what was said: prompts, answers, tool arguments
	// and results. Off by default: they may hold personal data.
	IncludeContent bool
	// Path is the tape's path, written on every span (jukebox.tape.path).
	Path string
	// Service names the service of the spans (the resource's
	// service.name); "" is the run's name, else the agent's command.
	Service string
	// Remote opens the tapes URLs name (a store's, tapestore.Opener) for
	// OTLP; nil reads files only.
	Remote tapefmt.RemoteOpener
	// Compat, when set (CompatOpenInference, CompatOpenLLMetry), adds to
	// every span the attributes of that vocabulary beside the GenAI
	// conventions' (compat.go).
	Compat string
}

// converter turns a tape's frames, in order, into spans and measures. One
// converter serves both the export of a closed tape and the live export of
// one being recorded, so the two agree span for span.
type converter struct {
	o         Options
	traceID   trace.TraceID
	created   time.Time // the tape's wall-clock start: frame times are offsets from it
	tape      []attribute.KeyValue
	root      *span
	up        map[string]string // provider to base URL
	last      time.Time
	calls     map[uint64]*pendingCall   // open model calls, by call number
	tools     map[string]*span          // tool calls a model made, not yet answered, by call id
	mcp       map[mcpKey]*span          // tools/call requests not yet answered
	agents    map[string]*span          // invoke_agent spans of named agents
	order     []string                  // agents in order of first call
	sent      map[trace.SpanID]bool     // spans handed on already
	emit      func(*span)               // a finished span
	count     func(measure)             // a finished model call
	blob      func(tapefmt.Hash) []byte // a blob's bytes, nil when unknown
	lastAgent string                    // the agent of the latest agent.turn
}

// pendingCall is a model call whose answer has not come yet.
type pendingCall struct {
	span  *span
	req   *tapefmt.LLMRequest
	seq   uint64
	agent string
	body  []byte // the request body, decoded (content, tool results)
	raw   []byte // the request's blob as stored: a live export's blob is handed over once
}

// mcpKey finds the answer to a JSON-RPC request of one MCP session.
type mcpKey struct {
	server  string
	session int
	id      string
}

func newConverter(o Options, id [16]byte, created time.Time, blob func(tapefmt.Hash) []byte, emit func(*span), count func(measure)) *converter {
	c := &converter{o: o, traceID: trace.TraceID(id), created: created, blob: blob, emit: emit, count: count,
		calls: map[uint64]*pendingCall{}, tools: map[string]*span{}, mcp: map[mcpKey]*span{},
		agents: map[string]*span{}, sent: map[trace.SpanID]bool{}}
	// The tape's id alone: what names the run whatever exports it. Its
	// path and chain head differ between a live export and an offline one
	// (and from machine to machine), and a span sent again with other
	// attributes is another span to a receiver.
	c.tape = []attribute.KeyValue{attrTapeID.String(hex.EncodeToString(id[:]))}
	return c
}

// errNoBlob: a blob the export does not have (a live export that dropped
// it, a torn tape).
var errNoBlob = errors.New("blob not at hand")

// blobErr reads a blob as llmwire's readers take it: errNoBlob when it is
// not at hand.
func (c *converter) blobErr(h tapefmt.Hash) ([]byte, error) {
	if b := c.blob(h); b != nil {
		return b, nil
	}
	return nil, errNoBlob
}

// frameSpanID is the id of the span that starts at frame seq: the frame's
// number plus one (a span id is never zero), so ids are the same in every
// export of a tape.
func frameSpanID(seq uint64) trace.SpanID {
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], seq+1)
	return id
}

// nameSpanID is the id of a span that no single frame starts (an agent's,
// a tool call's): a hash of what names it, its top bit set, so it never
// meets a frame's id.
func nameSpanID(parts ...string) trace.SpanID {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], h.Sum64()|1<<63)
	return id
}

func (c *converter) at(d time.Duration) time.Time { return c.created.Add(d) }

// withTape adds the tape's attributes and the frame to attrs.
func (c *converter) withTape(seq uint64, attrs ...attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs)+len(c.tape)+1)
	out = append(out, attrs...)
	out = append(out, c.tape...)
	return append(out, attrFrame.Int64(int64(seq)))
}

// frame takes the next frame of the tape.
func (c *converter) frame(f tapefmt.Frame) error {
	p, err := f.Decode()
	if err != nil {
		return fmt.Errorf("frame %d: %w", f.Seq, err)
	}
	t := c.at(f.Time)
	if t.After(c.last) {
		c.last = t
	}
	switch p := p.(type) {
	case *tapefmt.RunStart:
		c.runStart(f.Seq, t, p)
	case *tapefmt.RunEnd:
		c.runEnd(t, p)
	case *tapefmt.LLMRequest:
		c.request(f.Seq, t, p)
	case *tapefmt.LLMResponse:
		c.response(f.Seq, t, p)
	case *tapefmt.MCPMessage:
		c.mcpMessage(f.Seq, t, p)
	case *tapefmt.AgentTurn:
		c.lastAgent = cmp.Or(p.Agent, c.lastAgent)
	case *tapefmt.BreakerTrip:
		attrs := []attribute.KeyValue{attribute.String("jukebox.breaker.rule", p.Rule),
			attribute.Float64("jukebox.breaker.cost_usd", p.Cost), attribute.Int64("jukebox.breaker.tokens", p.Tokens)}
		if c.o.IncludeContent { // the reason quotes what repeated: messages, tool arguments
			attrs = append(attrs, attribute.String("jukebox.breaker.reason", p.Reason))
		}
		c.rootEvent(eventBreakerTrip, t, f.Seq, attrs...)
	case *tapefmt.TxBegin:
		c.rootEvent(eventTxBegin, t, f.Seq, attribute.String("jukebox.tx.id", p.Tx), attribute.String("jukebox.tx.mode", string(p.Mode)))
	case *tapefmt.TxCommit:
		c.rootEvent(eventTxCommit, t, f.Seq, attribute.String("jukebox.tx.id", p.Tx), attribute.Int("jukebox.tx.changes", p.Changes))
	case *tapefmt.TxRollback:
		c.rootEvent(eventTxRollback, t, f.Seq, attribute.String("jukebox.tx.id", p.Tx), attribute.String("jukebox.tx.reason", p.Reason))
	}
	return nil
}

func (c *converter) rootEvent(name string, t time.Time, seq uint64, attrs ...attribute.KeyValue) {
	if c.root == nil {
		return
	}
	c.root.events = append(c.root.events, event{name: name, at: t, attrs: append(attrs, attrFrame.Int64(int64(seq)))})
}

// runStart opens the run's span: invoke_agent, named for the run.
func (c *converter) runStart(seq uint64, t time.Time, p *tapefmt.RunStart) {
	agent := agentName(p)
	c.up = p.Upstream
	c.root = &span{name: opInvokeAgent + " " + agent, kind: trace.SpanKindInternal, id: frameSpanID(seq), start: t, end: t,
		attrs: c.withTape(seq, attrOperation.String(opInvokeAgent), attrAgentName.String(agent), attrRunMode.String(string(p.Mode)))}
	if p.Parent != nil {
		c.root.events = append(c.root.events, event{name: eventFork, at: t, attrs: []attribute.KeyValue{
			attribute.String("jukebox.fork.parent", p.Parent.Tape), attribute.Int64("jukebox.fork.frame", int64(p.Parent.Frame)),
			attribute.Int64("jukebox.fork.call", int64(p.Parent.Call)), attribute.String("jukebox.fork.parent_path", p.Parent.Path)}})
	}
}

// agentName names a run's agent: the run's name (record names every run:
// --name, else the script's name), else its command.
func agentName(p *tapefmt.RunStart) string {
	switch {
	case p.Name != "":
		return p.Name
	case len(p.Argv) > 0 && p.Argv[0] != "":
		return path.Base(p.Argv[0])
	}
	return "agent"
}

// runEnd closes the run: every span still open ends here.
func (c *converter) runEnd(t time.Time, p *tapefmt.RunEnd) {
	if c.root == nil {
		return
	}
	c.root.attrs = append(c.root.attrs, attrExitCode.Int(p.ExitCode))
	switch {
	case p.Error != "":
		c.root.err = p.Error
	case p.Reason != "":
		c.root.err = string(p.Reason)
	case p.Signal != "":
		c.root.err = "signal " + p.Signal
	case p.ExitCode != 0:
		c.root.err = fmt.Sprintf("exit status %d", p.ExitCode)
	}
	c.finish(t)
}

// finish sends every span still open, ending at t: calls that never got
// an answer, tool calls never answered, the agents' spans and the run's.
func (c *converter) finish(t time.Time) {
	if c.root == nil || c.sent[c.root.id] {
		return
	}
	for _, pc := range c.calls {
		pc.span.end, pc.span.err = t, "no response recorded"
		c.send(pc.span)
	}
	clear(c.calls)
	for _, s := range c.tools {
		s.end = maxTime(s.start, t)
		c.send(s)
	}
	clear(c.tools)
	for _, s := range c.mcp {
		s.end, s.err = maxTime(s.start, t), "no answer recorded"
		c.send(s)
	}
	clear(c.mcp)
	for _, a := range c.order {
		c.send(c.agents[a])
	}
	c.root.end = maxTime(c.root.start, t)
	c.send(c.root)
}

func (c *converter) send(s *span) {
	if c.sent[s.id] {
		return
	}
	c.sent[s.id] = true
	if c.o.Compat != "" {
		s.attrs = append(s.attrs, compatAttrs(c.o.Compat, s)...)
	}
	c.emit(s)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// parentOf is the span a model call belongs to: its agent's, when the run
// names agents (X-Jukebox-Agent, or the control API's latest turn), else
// the run's.
func (c *converter) parentOf(agent string, t time.Time) trace.SpanID {
	if c.root == nil {
		return trace.SpanID{}
	}
	if agent == "" {
		return c.root.id
	}
	a, ok := c.agents[agent]
	if !ok {
		a = &span{name: opInvokeAgent + " " + agent, kind: trace.SpanKindInternal, id: nameSpanID("agent", agent),
			parent: c.root.id, start: t, end: t,
			attrs: append([]attribute.KeyValue{attrOperation.String(opInvokeAgent), attrAgentName.String(agent)}, c.tape...)}
		c.agents[agent] = a
		c.order = append(c.order, agent)
	}
	return a.id
}

// chatSuffixes end the paths of the other providers' chat calls: Gemini's
// and Vertex's methods, Bedrock's Converse and InvokeModel, Cohere's and
// Ollama's chat.
var chatSuffixes = []string{":generateContent", ":streamGenerateContent", ":rawPredict", ":streamRawPredict",
	"/converse", "/converse-stream", "/invoke", "/invoke-with-response-stream", "/v1/chat", "/v2/chat", "/api/chat", "/api/generate"}

// operation names a call by its path: a chat (chat completions, the
// Responses API, Anthropic's messages, chatSuffixes), embeddings, a plain
// completion; "" for a call that asks no model anything (GET /v1/models,
// a batch).
func operation(p string) string {
	p, _, _ = strings.Cut(p, "?")
	for _, s := range chatSuffixes {
		if strings.HasSuffix(p, s) {
			return opChat
		}
	}
	switch {
	case strings.HasSuffix(p, "/chat/completions"), strings.HasSuffix(p, "/responses"), strings.HasSuffix(p, "/messages"):
		return opChat
	case strings.HasSuffix(p, "/embeddings"), strings.HasSuffix(p, "/embed"), strings.HasSuffix(p, ":embedContent"):
		return opEmbeddings
	case strings.HasSuffix(p, "/completions"), strings.HasSuffix(p, "/complete"):
		return opTextComplete
	}
	return ""
}

// request opens a chat span.
func (c *converter) request(seq uint64, t time.Time, p *tapefmt.LLMRequest) {
	op := operation(p.Path)
	var body []byte
	raw := c.blob(p.Body)
	if raw != nil {
		body = llmwire.DecodeBody(p.Header, raw).Text
	}
	c.closeToolsAnsweredBy(body, t)
	agent := llmwire.AgentOf(p.Header, c.lastAgent)
	s := &span{name: strings.TrimSpace(op + " " + p.Model), kind: trace.SpanKindClient, id: frameSpanID(seq),
		parent: c.parentOf(agent, t), start: t, end: t,
		attrs: c.withTape(seq, attrOperation.String(op), attrProvider.String(otelProvider(p.Provider)))}
	if op == "" { // not a model call: an HTTP call to the provider
		s.name = p.Method + " " + p.Path
		s.attrs = c.withTape(seq, attrProvider.String(otelProvider(p.Provider)), attrHTTPMethod.String(p.Method), attrURLPath.String(p.Path))
	}
	if p.Model != "" {
		s.attrs = append(s.attrs, attrRequestModel.String(p.Model))
	}
	if host, port, ok := c.server(p); ok {
		s.attrs = append(s.attrs, attrServerAddress.String(host))
		if port > 0 {
			s.attrs = append(s.attrs, attrServerPort.Int(port))
		}
	}
	if body != nil {
		s.attrs = append(s.attrs, requestParams(body)...)
	}
	if c.o.IncludeContent && body != nil {
		s.attrs = append(s.attrs, contentOf(body)...)
	}
	c.calls[p.Call] = &pendingCall{span: s, req: p, seq: seq, agent: agent, body: body, raw: raw}
}

// server is the host and port a call went to: the host the agent asked
// for, or its provider's upstream in the run's start.
func (c *converter) server(p *tapefmt.LLMRequest) (string, int, bool) {
	raw := c.up[p.Provider]
	if p.Host != "" { // through the forward proxy: the host the agent asked for
		raw = p.Scheme + "://" + p.Host
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 && u.Scheme == "https" {
		port = 443
	}
	return u.Hostname(), port, true
}

// contentOf is a request's content as the conventions carry it: the system
// instructions as text parts, the messages as role and parts (text,
// tool_call with its id, name and arguments, tool_call_response with the
// id of the call it answers), and the tools offered in the provider's own
// JSON.
func contentOf(body []byte) []attribute.KeyValue {
	p, ok := llmwire.ParsePrompt(body)
	if !ok {
		return nil
	}
	type message struct {
		Role  string    `json:"role"`
		Parts []msgPart `json:"parts"`
	}
	var out []attribute.KeyValue
	msgs := make([]message, 0, len(p.Messages))
	for _, m := range p.Messages {
		if m.Role == "system" || m.Role == "developer" {
			continue // in the system instructions
		}
		parts := make([]msgPart, 0, len(m.Parts))
		for _, x := range m.Parts {
			switch x.Type {
			case "tool_call":
				parts = append(parts, msgPart{Type: x.Type, ID: x.ID, Name: x.Name, Arguments: jsonOrText(x.Arguments)})
			case "tool_call_response":
				parts = append(parts, msgPart{Type: x.Type, ID: x.ID, Response: x.Content})
			default:
				parts = append(parts, msgPart{Type: "text", Content: x.Content})
			}
		}
		if len(parts) == 0 {
			parts = append(parts, msgPart{Type: "text", Content: m.Text})
		}
		msgs = append(msgs, message{Role: m.Role, Parts: parts})
	}
	if b, err := json.Marshal(msgs); err == nil && len(msgs) > 0 {
		out = append(out, attrInputMessages.String(string(b)))
	}
	if p.System != "" {
		if b, err := json.Marshal([]msgPart{{Type: "text", Content: p.System}}); err == nil {
			out = append(out, attrSystem.String(string(b)))
		}
	}
	var req struct {
		Tools json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Tools) > 0 && string(req.Tools) != "null" {
		out = append(out, attrToolDefinitions.String(string(req.Tools)))
	}
	return out
}

// requestParams are a request's sampling parameters as the conventions
// name them (gen_ai.request.*): not content, exported always.
func requestParams(body []byte) []attribute.KeyValue {
	var r struct {
		MaxTokens           *int64          `json:"max_tokens"`
		MaxCompletionTokens *int64          `json:"max_completion_tokens"`
		MaxOutputTokens     *int64          `json:"max_output_tokens"`
		Temperature         *float64        `json:"temperature"`
		TopP                *float64        `json:"top_p"`
		TopK                *float64        `json:"top_k"`
		FrequencyPenalty    *float64        `json:"frequency_penalty"`
		PresencePenalty     *float64        `json:"presence_penalty"`
		Seed                *int64          `json:"seed"`
		Stop                json.RawMessage `json:"stop"`
		StopSequences       []string        `json:"stop_sequences"`
		N                   *int64          `json:"n"`
		Conversation        json.RawMessage `json:"conversation"`
		PreviousResponseID  string          `json:"previous_response_id"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	var out []attribute.KeyValue
	if m := cmp.Or(r.MaxTokens, r.MaxCompletionTokens, r.MaxOutputTokens); m != nil {
		out = append(out, attrReqMaxTokens.Int64(*m))
	}
	for k, v := range map[attribute.Key]*float64{attrReqTemperature: r.Temperature, attrReqTopP: r.TopP, attrReqTopK: r.TopK,
		attrReqFrequencyPenalty: r.FrequencyPenalty, attrReqPresencePenalty: r.PresencePenalty} {
		if v != nil {
			out = append(out, k.Float64(*v))
		}
	}
	if r.Seed != nil {
		out = append(out, attrReqSeed.Int64(*r.Seed))
	}
	if r.N != nil && *r.N != 1 {
		out = append(out, attrReqChoiceCount.Int64(*r.N))
	}
	stop := r.StopSequences
	var one string
	if json.Unmarshal(r.Stop, &one) == nil && one != "" {
		stop = append(stop, one)
	} else {
		var many []string
		if json.Unmarshal(r.Stop, &many) == nil {
			stop = append(stop, many...)
		}
	}
	if len(stop) > 0 {
		out = append(out, attrReqStopSequences.StringSlice(stop))
	}
	// The conversation an OpenAI Responses call continues: its id, or the
	// answer it follows.
	var conv struct {
		ID string `json:"id"`
	}
	var convID string
	if json.Unmarshal(r.Conversation, &convID) != nil && json.Unmarshal(r.Conversation, &conv) == nil {
		convID = conv.ID
	}
	if id := cmp.Or(convID, r.PreviousResponseID); id != "" {
		out = append(out, attrConversationID.String(id))
	}
	slices.SortFunc(out, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return out
}

// response ends a chat span and counts the call.
func (c *converter) response(seq uint64, t time.Time, p *tapefmt.LLMResponse) {
	pc, ok := c.calls[p.Call]
	if !ok {
		return // a response without its request: a torn tape
	}
	delete(c.calls, p.Call)
	s := pc.span
	s.end = maxTime(s.start, t) // the response frame: the timeline's own clock
	var body []byte
	raw := c.blob(p.Body)
	if raw != nil {
		body = llmwire.PayloadBody(p, raw).Text
	}
	// The request's blob as its frame had it, and the answer's as read
	// above: a live export is handed each blob once, and the answer's
	// usage, counted when it reported none, reads both again.
	blobs := func(h tapefmt.Hash) ([]byte, error) {
		switch {
		case h == pc.req.Body && pc.raw != nil:
			return pc.raw, nil
		case h == p.Body && raw != nil:
			return raw, nil
		}
		return c.blobErr(h)
	}
	use := llmwire.ResponseUsage(p, blobs, func() llmwire.Call { return llmwire.RequestCall(pc.req, blobs) })
	input := use.Usage.Input
	if llmwire.CacheApart(pc.req.Provider, pc.req.Path) { // Anthropic (and Bedrock) count cached input apart; the conventions include it
		input += use.Usage.Cached + use.Usage.CacheWrite
	}
	s.attrs = append(s.attrs, attrResponseFrame.Int64(int64(seq)))
	if use.Model != "" {
		s.attrs = append(s.attrs, attrResponseModel.String(use.Model))
	}
	if use.Usage != (tapefmt.Usage{}) {
		s.attrs = append(s.attrs, attrInputTokens.Int64(input), attrOutputTokens.Int64(use.Usage.Output))
		if use.Usage.Cached > 0 {
			s.attrs = append(s.attrs, attrCacheRead.Int64(use.Usage.Cached))
		}
		if use.Usage.CacheWrite > 0 {
			s.attrs = append(s.attrs, attrCacheCreation.Int64(use.Usage.CacheWrite))
		}
	}
	if use.Priced {
		s.attrs = append(s.attrs, attrCostUSD.Float64(use.Cost))
	}
	if use.Estimated {
		s.attrs = append(s.attrs, attrEstimated.Bool(true))
	}
	var calls []llmwire.ToolUse
	if body != nil {
		a := llmwire.ReadAnswer(body)
		if a.Text == "" && len(a.Calls) == 0 { // Gemini, Bedrock, Cohere, Ollama: their own shapes
			a.Text = llmwire.AnswerText(pc.req.Provider, pc.req.Path, body)
		}
		if a.ID != "" {
			s.attrs = append(s.attrs, attrResponseID.String(a.ID))
		}
		if len(a.Finish) > 0 {
			s.attrs = append(s.attrs, attrFinishReasons.StringSlice(a.Finish))
		}
		calls = a.Calls
		if c.o.IncludeContent {
			s.attrs = append(s.attrs, attrOutputMessages.String(outputMessages(a.Text, calls, a.Finish)))
		}
	}
	errType := ""
	switch {
	case llmwire.Refused(p):
		// Never sent: the breaker's reason may quote the call's content.
		errType, s.err = errBreakerRefused, "refused by the circuit breaker"
		if c.o.IncludeContent {
			s.err = p.Error
		}
	case p.Error != "":
		errType, s.err = "connection", p.Error
	case p.Status >= 400:
		errType, s.err = strconv.Itoa(p.Status), fmt.Sprintf("HTTP %d", p.Status)
	}
	if p.Status > 0 {
		s.attrs = append(s.attrs, attrHTTPStatus.Int(p.Status))
	}
	if errType != "" {
		s.attrs = append(s.attrs, attrErrorType.String(errType))
	}
	if a, ok := c.agents[pc.agent]; ok {
		a.end = maxTime(a.end, s.end)
	}
	c.send(s)
	if operation(pc.req.Path) == "" {
		return // no model was asked: nothing to count
	}
	m := measure{op: operation(pc.req.Path), provider: pc.req.Provider, requestModel: pc.req.Model, responseModel: use.Model,
		input: input, output: use.Usage.Output, usage: use.Usage != (tapefmt.Usage{}),
		seconds: s.end.Sub(s.start).Seconds(), streamed: len(p.Chunks) > 0, errType: errType}
	if p.Elapsed > 0 { // measured by the proxy, from the request sent to the last byte
		m.seconds = time.Duration(p.Elapsed).Seconds()
	}
	if m.streamed {
		m.firstChunk = time.Duration(p.Chunks[0].At).Seconds()
	}
	c.count(m)
	for i, tc := range calls {
		c.tools[tc.ID] = c.toolSpan(nameSpanID("tool", strconv.FormatUint(seq, 10), strconv.Itoa(i), tc.ID), s.parent,
			s.end, seq, tc.Name, tc.ID, toolTypeFunc, tc.Args)
	}
}

func (c *converter) toolSpan(id, parent trace.SpanID, t time.Time, seq uint64, name, callID, typ, args string) *span {
	s := &span{name: strings.TrimSpace(opExecuteTool + " " + name), kind: trace.SpanKindInternal, id: id, parent: parent,
		start: t, end: t, attrs: c.withTape(seq, attrOperation.String(opExecuteTool), attrToolName.String(name), attrToolType.String(typ))}
	if callID != "" {
		s.attrs = append(s.attrs, attrToolCallID.String(callID))
	}
	if c.o.IncludeContent && args != "" {
		s.attrs = append(s.attrs, attrToolArgs.String(args))
	}
	return s
}

// outputMessages is an answer as the conventions carry it: one assistant
// message with its text and tool calls as parts, and why it finished.
func outputMessages(text string, calls []llmwire.ToolUse, finish []string) string {
	// The answer's text as the readers assemble it shows each tool call as
	// a line "→ name arguments": those are the tool_call parts, not text.
	for _, tc := range calls {
		text = strings.Replace(text, "→ "+tc.Name+" "+tc.Args, "", 1)
	}
	text = strings.TrimSpace(text)
	var parts []msgPart
	if text != "" {
		parts = append(parts, msgPart{Type: "text", Content: text})
	}
	for _, tc := range calls {
		parts = append(parts, msgPart{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: jsonOrText(tc.Args)})
	}
	msg := map[string]any{"role": "assistant", "parts": parts}
	if parts == nil {
		msg["parts"] = []msgPart{}
	}
	if len(finish) > 0 {
		msg["finish_reason"] = finish[0]
	}
	b, _ := json.Marshal([]map[string]any{msg})
	return string(b)
}

// closeToolsAnsweredBy ends the tool calls whose results a request
// carries back to the model: the agent ran them before it sent it.
func (c *converter) closeToolsAnsweredBy(body []byte, t time.Time) {
	if len(c.tools) == 0 || body == nil {
		return
	}
	for _, r := range llmwire.RequestToolResults(body) {
		s, ok := c.tools[r.ID]
		if !ok {
			continue
		}
		delete(c.tools, r.ID)
		s.end = maxTime(s.end, t)
		if c.o.IncludeContent {
			s.attrs = append(s.attrs, attrToolResult.String(r.Content))
		}
		c.send(s)
	}
}

// mcpMessage times a tools/call on an MCP server: from the request to its
// answer. A call linked to a model's tool call is that call's span, now
// exactly timed; an unlinked one gets a span of its own.
func (c *converter) mcpMessage(seq uint64, t time.Time, p *tapefmt.MCPMessage) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := p.Message
	if len(msg) == 0 {
		msg = c.blob(p.Body)
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return
	}
	key := mcpKey{p.Server, p.Session, string(m.ID)}
	switch p.Direction {
	case tapefmt.MCPToServer:
		if m.Method != "tools/call" {
			return
		}
		var s *span
		if p.Call != nil {
			if s = c.tools[p.Call.ID]; s != nil {
				delete(c.tools, p.Call.ID)
				s.start = maxTime(s.start, t)
			}
		}
		if s == nil {
			s = c.toolSpan(frameSpanID(seq), c.parentOf("", t), t, seq, m.Params.Name, "", toolTypeExt, string(m.Params.Arguments))
		}
		s.attrs = append(s.attrs, attrMCPServer.String(p.Server))
		c.mcp[key] = s
	case tapefmt.MCPFromServer:
		s, ok := c.mcp[key]
		if !ok {
			return
		}
		delete(c.mcp, key)
		s.end = maxTime(s.start, t)
		switch {
		case m.Error != nil:
			// The server's message is the tool's to say (it quoted the
			// arguments, a record's fields): content, sent only with
			// IncludeContent, as the result is; else its code alone.
			s.err = fmt.Sprintf("the tool call failed (JSON-RPC error %d)", m.Error.Code)
			if c.o.IncludeContent {
				s.err = cmp.Or(m.Error.Message, s.err)
			}
			s.attrs = append(s.attrs, attrErrorType.String("mcp_error"))
		case m.Result != nil && m.Result.IsError:
			s.err = "the tool answered with an error"
			s.attrs = append(s.attrs, attrErrorType.String("tool_error"))
		}
		if c.o.IncludeContent && m.Error == nil {
			// The tool's result, not the JSON-RPC message around it.
			var whole struct {
				Result json.RawMessage `json:"result"`
			}
			result := msg
			if json.Unmarshal(msg, &whole) == nil && len(whole.Result) > 0 {
				result = whole.Result
			}
			s.attrs = append(s.attrs, attrToolResult.String(string(result)))
		}
		c.send(s)
	}
}

// msgPart is a part of a message as the conventions write it: text, a
// tool call (its id, name and arguments) or a tool call's response.
type msgPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

// jsonOrText is a tool call's arguments as the conventions hold them: the
// JSON value they are, or the text as sent when it is not JSON.
func jsonOrText(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}
