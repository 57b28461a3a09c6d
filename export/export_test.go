package export

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// created is the wall-clock start of the tapes these tests write.
var created = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// writeRun writes a tape of a whole run with a fixed clock (frame n at n
// × 100 ms): an Anthropic call, streamed, that asks for a tool with cache
// reads and writes; the tool run on an MCP server (linked to the call);
// the next call carrying the result back; an OpenAI call by a named
// agent; a booth transaction; a breaker trip; exit status 3. obs, if set,
// sees it written.
func writeRun(t testing.TB, path string, obs tapefmt.Observer) {
	t.Helper()
	var clock time.Duration
	w, err := tapefmt.Create(path, tapefmt.Options{Created: created, ID: [16]byte{0xab, 0xcd, 1},
		Now: func() time.Duration { clock += 100 * time.Millisecond; return clock }, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	blob := func(lane, s string) tapefmt.Hash {
		h, err := w.PutBlob(lane, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	must(w.Append(0, tapefmt.RunStart{Name: "support-bot", Argv: []string{"python", "bot.py"}, Host: "ci-7",
		Mode: tapefmt.ModeRecord, Upstream: map[string]string{"anthropic": "https://api.anthropic.com", "openai": "http://127.0.0.1:8931/v1"}}))
	ant := http2hdr("Content-Type", "application/json")
	req1 := blob("anthropic /v1/messages request", `{"model":"claude-sonnet-4-5","system":"You are terse.","max_tokens":100,"messages":[{"role":"user","content":"weather in Oslo?"}],"stream":true}`)
	must(w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "anthropic", Method: "POST", Path: "/v1/messages", Header: ant, Body: req1, Model: "claude-sonnet-4-5", Stream: true}))
	resp1 := blob("anthropic /v1/messages response", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":100,\"cache_creation_input_tokens\":20,\"output_tokens\":1}}}\n\n"+
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n"+
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}\n\n"+
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n")
	must(w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Body: resp1, Model: "claude-sonnet-4-5",
		Usage: tapefmt.Usage{Input: 10, Output: 15, Cached: 100, CacheWrite: 20}, Latency: int64(50 * time.Millisecond),
		Elapsed: int64(180 * time.Millisecond), Chunks: tapefmt.Chunks{{End: 10, At: int64(40 * time.Millisecond)}}}))
	must(w.Commit())
	must(w.Append(0, tapefmt.MCPMessage{Server: "weather", Session: 1, Direction: tapefmt.MCPToServer,
		Message: json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Oslo"}}}`),
		Call:    &tapefmt.ToolLink{Frame: 2, ID: "toolu_1"}}))
	must(w.Append(0, tapefmt.MCPMessage{Server: "weather", Session: 1, Direction: tapefmt.MCPFromServer,
		Message: json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"4°C, rain"}]}}`)}))
	req2 := blob("anthropic /v1/messages request", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"weather in Oslo?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"4°C, rain"}]}]}`)
	must(w.Append(0, tapefmt.LLMRequest{Call: 1, Provider: "anthropic", Method: "POST", Path: "/v1/messages", Header: ant, Body: req2, Model: "claude-sonnet-4-5"}))
	resp2 := blob("anthropic /v1/messages response", `{"id":"msg_02","type":"message","model":"claude-sonnet-4-5","stop_reason":"end_turn","content":[{"type":"text","text":"4°C and rain."}],"usage":{"input_tokens":30,"output_tokens":6}}`)
	must(w.Append(0, tapefmt.LLMResponse{Call: 1, Status: 200, Body: resp2, Usage: tapefmt.Usage{Input: 30, Output: 6}}))
	must(w.Commit())
	oh := http2hdr("X-Jukebox-Agent", "critic")
	req3 := blob("openai /v1/chat/completions request", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"grade it"}]}`)
	must(w.Append(0, tapefmt.LLMRequest{Call: 2, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Header: oh, Body: req3, Model: "gpt-4o-mini"}))
	must(w.Append(0, tapefmt.LLMResponse{Call: 2, Status: 429, Error: ""}))
	must(w.Append(0, tapefmt.TxBegin{Tx: "tx1", Mode: "overlay"}))
	must(w.Append(0, tapefmt.TxCommit{Tx: "tx1", Changes: 2}))
	must(w.Append(0, tapefmt.BreakerTrip{Rule: "cost", Reason: "over $1.00", Cost: 1.2}))
	must(w.Commit())
	must(w.Append(0, tapefmt.RunEnd{ExitCode: 3}))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func http2hdr(kv ...string) map[string][]string {
	h := map[string][]string{}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = []string{kv[i+1]}
	}
	return h
}

// convert runs the converter over a tape, as OTLP does, and returns the
// spans in the order sent, and the measures.
func convert(t testing.TB, path string, o Options) ([]*span, []measure) {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var spans []*span
	var ms []measure
	seen := map[trace.SpanID]bool{}
	c := newConverter(o, tp.ID(), tp.Created(), tapeBlobs(tp), func(s *span) {
		if seen[s.id] {
			t.Errorf("span %q (%v) sent twice", s.name, s.id)
		}
		seen[s.id] = true
		spans = append(spans, s)
	}, func(m measure) { ms = append(ms, m) })
	for f, err := range tp.All() {
		if err != nil {
			t.Fatal(err)
		}
		if err := c.frame(f); err != nil {
			t.Fatal(err)
		}
	}
	c.finish(c.last)
	return spans, ms
}

// named are the spans of that name.
func named(spans []*span, name string) []*span {
	var out []*span
	for _, s := range spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// one is the span of that name, failing the test unless there is one.
func one(t testing.TB, spans []*span, name string) *span {
	t.Helper()
	n := named(spans, name)
	if len(n) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(n), name)
	}
	return n[0]
}

func attrs(s *span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.attrs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// at is frame n's time on the tapes writeRun writes.
func at(n int) time.Time { return created.Add(time.Duration(n+1) * 100 * time.Millisecond) }

// TestSpans: the spans of a run, per the GenAI conventions: the run's
// invoke_agent span holds the model calls (chat) and tool calls
// (execute_tool); a named agent gets an invoke_agent span of its own;
// every span is at its recorded time and names the tape and frame;
// Anthropic's cached input counts in input_tokens; content only when
// asked for.
func TestSpans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	spans, ms := convert(t, path, Options{Path: path})
	var names []string
	for _, s := range spans {
		names = append(names, s.name)
	}
	want := []string{"chat claude-sonnet-4-5", "execute_tool get_weather", "chat claude-sonnet-4-5", "chat gpt-4o-mini", "invoke_agent critic", "invoke_agent support-bot"}
	if !slices.Equal(names, want) {
		t.Fatalf("spans sent %q, want %q", names, want)
	}
	root := one(t, spans, "invoke_agent support-bot")
	if root.parent.IsValid() || root.id != frameSpanID(0) || !root.start.Equal(at(0)) {
		t.Errorf("root: parent %v id %v start %v", root.parent, root.id, root.start)
	}
	if a := attrs(root); a["process.exit.code"] != "3" || a["gen_ai.operation.name"] != "invoke_agent" || a["jukebox.tape.id"] != "abcd0100000000000000000000000000" || root.err != "exit status 3" {
		t.Errorf("root attributes %v, error %q", a, root.err)
	}
	var evs []string
	for _, e := range root.events {
		evs = append(evs, e.name)
	}
	if !slices.Equal(evs, []string{eventTxBegin, eventTxCommit, eventBreakerTrip}) {
		t.Errorf("root events %q", evs)
	}
	tool := one(t, spans, "execute_tool get_weather")
	ta := attrs(tool)
	if tool.parent != root.id || ta["gen_ai.tool.call.id"] != "toolu_1" || ta["jukebox.mcp.server"] != "weather" || ta["gen_ai.tool.type"] != "function" {
		t.Errorf("tool span: parent %v, attributes %v", tool.parent, ta)
	}
	// Timed by the MCP request (frame 4) and its answer (frame 5).
	if !tool.start.Equal(at(4)) || !tool.end.Equal(at(5)) {
		t.Errorf("tool span from %v to %v, want %v to %v", tool.start, tool.end, at(4), at(5))
	}
	if _, ok := ta["gen_ai.tool.call.arguments"]; ok {
		t.Errorf("content without IncludeContent: %v", ta)
	}
	critic := one(t, spans, "invoke_agent critic")
	gpt := one(t, spans, "chat gpt-4o-mini")
	if critic.parent != root.id || gpt.parent != critic.id {
		t.Errorf("agent span parent %v (root %v), its call's parent %v (agent %v)", critic.parent, root.id, gpt.parent, critic.id)
	}
	if ga := attrs(gpt); ga["error.type"] != "429" || gpt.err == "" || ga["server.address"] != "127.0.0.1" || ga["server.port"] != "8931" {
		t.Errorf("failed call: attributes %v, error %q", ga, gpt.err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d measures, want 3", len(ms))
	}
	first := ms[0]
	if first.input != 130 || first.output != 15 || !first.streamed || first.firstChunk != 0.04 || first.seconds != 0.18 {
		t.Errorf("first call measured %+v: want input 10+100+20, output 15, first chunk 0.04 s, 0.18 s", first)
	}
	if ms[2].errType != "429" || ms[2].usage {
		t.Errorf("failed call measured %+v", ms[2])
	}
}

// TestSpansFirstCall checks the first model call's span whole, with
// content asked for: its id is its request frame's.
func TestSpansFirstCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var first *span
	c := newConverter(Options{IncludeContent: true}, tp.ID(), tp.Created(), tapeBlobs(tp), func(s *span) {
		if s.id == frameSpanID(1) {
			first = s
		}
	}, func(measure) {})
	for f := range tp.All() {
		c.frame(f)
	}
	if first == nil {
		t.Fatal("no span for frame 1")
	}
	a := attrs(first)
	for k, v := range map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.response.model": "claude-sonnet-4-5", "gen_ai.response.id": "msg_01", "gen_ai.response.finish_reasons": `["tool_use"]`,
		"gen_ai.usage.input_tokens": "130", "gen_ai.usage.output_tokens": "15", "gen_ai.usage.cache_read.input_tokens": "100",
		"gen_ai.usage.cache_creation.input_tokens": "20", "jukebox.frame": "1", "jukebox.response.frame": "2",
		"server.address": "api.anthropic.com", "server.port": "443", "gen_ai.system_instructions": `[{"type":"text","content":"You are terse."}]`,
		"gen_ai.request.max_tokens": "100",
		"gen_ai.input.messages":     `[{"role":"user","parts":[{"type":"text","content":"weather in Oslo?"}]}]`,
	} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	if !strings.Contains(a["gen_ai.output.messages"], `"name":"get_weather"`) || !strings.Contains(a["gen_ai.output.messages"], `"finish_reason":"tool_use"`) ||
		strings.Contains(a["gen_ai.output.messages"], `"type":"text"`) {
		t.Errorf("content: %q / %q", a["gen_ai.input.messages"], a["gen_ai.output.messages"])
	}
	if !first.start.Equal(at(1)) || !first.end.Equal(at(2)) {
		t.Errorf("first call from %v to %v", first.start, first.end)
	}
}

// TestSpanIDs: ids come from the tape, so every export of it agrees.
func TestSpanIDs(t *testing.T) {
	if frameSpanID(0) == (trace.SpanID{}) || nameSpanID("agent", "a") == nameSpanID("agent", "b") {
		t.Error("span ids collide")
	}
	if id := nameSpanID("tool", "3", "0", "x"); id[0]&0x80 == 0 {
		t.Errorf("a named span's id %v could meet a frame's", id)
	}
}

// TestTornTapeEndsItsSpans: a tape cut short (a crash) still exports
// whole spans, ended at its last frame.
func TestTornTapeEndsItsSpans(t *testing.T) {
	spans, _ := convert(t, "../testdata/tapes/torn.jbx", Options{})
	if len(spans) == 0 {
		t.Fatal("no spans from a torn tape")
	}
	for _, s := range spans {
		if s.end.Before(s.start) {
			t.Errorf("%s ends before it starts", s.name)
		}
	}
}

func TestHARAndJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var har bytes.Buffer
	if err := HAR(&har, tp, path, "test"); err != nil {
		t.Fatal(err)
	}
	var doc harDoc
	if err := json.Unmarshal(har.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Log.Entries) != 3 {
		t.Fatalf("%d entries, want 3", len(doc.Log.Entries))
	}
	e := doc.Log.Entries[0]
	if e.Request.URL != "https://api.anthropic.com/v1/messages" || e.Response.Status != 200 || e.Started != at(1).Format(time.RFC3339Nano) ||
		!strings.Contains(e.Request.PostData.Text, "You are terse.") || !strings.Contains(e.Response.Content.Text, "toolu_1") || e.Timings.Wait != 50 {
		t.Errorf("first entry: %+v", e)
	}
	if u := doc.Log.Entries[2].Request.URL; u != "http://127.0.0.1:8931/v1/chat/completions" {
		t.Errorf("OpenAI entry URL %q", u)
	}
	var js bytes.Buffer
	if err := JSON(&js, tp, path); err != nil {
		t.Fatal(err)
	}
	var all struct {
		Tape struct {
			ID     string `json:"id"`
			Frames int    `json:"frames"`
		} `json:"tape"`
		Frames []struct {
			Seq     uint64          `json:"seq"`
			Kind    string          `json:"kind"`
			Payload json.RawMessage `json:"payload"`
		} `json:"frames"`
		Blobs map[string]struct {
			Text string `json:"text"`
		} `json:"blobs"`
	}
	if err := json.Unmarshal(js.Bytes(), &all); err != nil {
		t.Fatalf("%v\n%s", err, js.String())
	}
	if all.Tape.Frames != tp.Len() || len(all.Frames) != tp.Len() || len(all.Blobs) != 5 || all.Frames[1].Kind != "llm.request" {
		t.Errorf("json: %d/%d frames, %d blobs", all.Tape.Frames, len(all.Frames), len(all.Blobs))
	}
}
