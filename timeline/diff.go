package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// LoadForDiff opens the tape at path and returns its timeline for
// diffview, named after the file.
func LoadForDiff(path string) (diffview.Timeline, error) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return diffview.Timeline{}, err
	}
	defer t.Close()
	return ForDiff(t, filepath.Base(path))
}

// ForDiff turns the frames of a tape into the frames diffview aligns.
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
// in diffview.Timeline.Steps. tx.begin, tx.commit and tx.rollback are left
// out too: a fork runs in the Shadow Booth by default, so they would set
// every fork apart from its parent, and the file.change frames carry what a
// transaction did (a tx.begin or a file.change sets Timeline.Files: a
// parent recorded outside the booth has none, and diffview.Compare then
// leaves the fork's out). What the agent printed (proc.output) becomes one frame
// per fd holding the whole run's output, placed before run.end: when bytes
// reach a pipe is a race with the model calls around them, so interleaved
// output frames would align differently on every run, while what was
// printed does not. For the same reason, LLM frames that follow one
// another are put in call order, each request before its answer (see
// orderCalls).
func ForDiff(t *tapefmt.Tape, name string) (diffview.Timeline, error) {
	steps, err := StepsOf(t)
	if err != nil {
		return diffview.Timeline{Name: name}, err
	}
	b := &timelineBuilder{t: t, tl: diffview.Timeline{Name: name, Steps: steps, TapeFrames: t.Len()},
		calls: map[uint64]*tapefmt.LLMRequest{}, tools: map[string]string{}, outputs: map[int]*outputFrame{}, texts: map[tapefmt.Hash]string{}, callKey: map[int]uint64{}}
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
	b.orderCalls()
	b.flushOutput()
	return b.tl, nil
}

type timelineBuilder struct {
	t       *tapefmt.Tape
	tl      diffview.Timeline
	calls   map[uint64]*tapefmt.LLMRequest // by call number, to name responses
	tools   map[string]string              // tool name by call id, to name results
	outputs map[int]*outputFrame           // the run's output by fd
	texts   map[tapefmt.Hash]string        // request and response texts by body, made once
	convs   conversations                  // request texts, sharing what they resend
	callKey map[int]uint64                 // by frame number: an LLM frame's place in call order (orderCalls)
}

func (b *timelineBuilder) add(f tapefmt.Frame, p tapefmt.Payload) error {
	switch p := p.(type) {
	case *tapefmt.Output:
		b.output(f, p)
		return nil
	case *tapefmt.TxBegin:
		b.tl.Files = true // a run in the booth: its file changes are on the tape
		return nil
	}
	fr := diffview.Frame{Seq: int(f.Seq), Kind: f.Kind.String(), Time: f.Time, Title: Describe(p)}
	var err error
	switch p := p.(type) {
	case *tapefmt.RunStart:
		fr.Signature, fr.Title = fr.Kind, "start "+strings.Join(p.Argv, " ")
		b.tl.NoOutput = b.tl.NoOutput || p.External
	case *tapefmt.LLMRequest:
		b.callKey[fr.Seq] = 2 * p.Call
		err = b.request(&fr, p)
	case *tapefmt.LLMResponse:
		b.callKey[fr.Seq] = 2*p.Call + 1
		err = b.response(&fr, p)
	case *tapefmt.ToolCall:
		b.tools[p.ID] = p.Name
		fr.Signature, fr.Title, fr.Body = fr.Kind+" "+p.Name, p.Name+" "+OneLine(string(p.Args), 80), indentJSON(p.Args)
	case *tapefmt.ToolResult:
		err = b.toolResult(&fr, p)
	case *tapefmt.MCPMessage:
		err = b.mcp(&fr, p)
	case *tapefmt.FileChange:
		b.tl.Files = true
		err = b.file(&fr, p)
	case *tapefmt.AgentTurn:
		fr.Signature, fr.Title, fr.Body = fr.Kind+" "+p.Agent+" "+p.Role, OneLine(p.Role+": "+p.Text, 80), p.Text
		fr.Cost = p.Reported() // spending jukebox did not see, which ls and cost count too
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
	out, ok := b.outputs[o.Fd]
	if !ok {
		out = &outputFrame{Frame: diffview.Frame{Seq: int(f.Seq), Kind: f.Kind.String(), Time: f.Time, Signature: f.Kind.String() + " " + fdName(o.Fd)}}
		b.outputs[o.Fd] = out
	}
	out.data = append(out.data, o.Data...) // a streaming agent's thousands of frames, copied once
}

// outputFrame is the frame of an fd's output, its body gathered.
type outputFrame struct {
	diffview.Frame
	data []byte
}

// flushOutput places the output frames, in fd order, before a final run.end.
func (b *timelineBuilder) flushOutput() {
	at := len(b.tl.Frames)
	if at > 0 && b.tl.Frames[at-1].Kind == tapefmt.KindRunEnd.String() {
		at--
	}
	var outs []diffview.Frame
	for _, fd := range slices.Sorted(maps.Keys(b.outputs)) {
		o := &b.outputs[fd].Frame
		o.Body = string(b.outputs[fd].data)
		lines, unit := strings.Count(strings.TrimSuffix(o.Body, "\n"), "\n")+1, "lines"
		if lines == 1 {
			unit = "line"
		}
		o.Title = fmt.Sprintf("%s, %d %s: %s", fdName(fd), lines, unit, OneLine(o.Body, 60))
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
	fr.Signature = fr.Kind + " " + p.Method + " " + p.Path
	fr.Title = strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Method, p.Path, p.Model))
	if p.Stream {
		fr.Title += " stream"
	}
	body, err := b.body(p.Header, p.Body)
	if err != nil {
		return err
	}
	fr.Body = b.text(p.Body, body, func(body []byte) string { return b.convs.share(llmwire.RequestText(body)) })
	return nil
}

// conversations holds request texts so that the ones resending a
// conversation share its bytes. An agent sends its whole conversation
// with each request: a request's text is mostly the one before it plus
// what the step added, and a long run's texts, held apart, grow as the
// square of its steps (800 steps: 200 MB). A text that extends the last
// text of a recent conversation is appended to that conversation's
// buffer, and is a string over it: the texts of one conversation take
// about twice the longest of them.
type conversations struct {
	recent []*strings.Builder // each holds its conversation's last text; the most recent last
}

// recentConversations is how many conversations a text may extend:
// agents taking turns, or an agent with helpers, each resend their own.
const recentConversations = 8

// share returns s, over the bytes of the recent conversation it extends
// when there is one.
func (cs *conversations) share(s string) string {
	if s == "" {
		return s
	}
	for i, c := range cs.recent {
		if c.Len() > 0 && strings.HasPrefix(s, c.String()) {
			added := s[c.Len():]
			c.Grow(len(added)) // doubling: the earlier texts keep the buffers they were made over
			c.WriteString(added)
			cs.recent = append(slices.Delete(cs.recent, i, i+1), c)
			return c.String()
		}
	}
	c := &strings.Builder{}
	c.WriteString(s)
	if len(cs.recent) == recentConversations {
		cs.recent = slices.Delete(cs.recent, 0, 1)
	}
	cs.recent = append(cs.recent, c)
	return c.String()
}

// text renders a body once per blob: frames that name the same body (an
// agent resending one request) share the text.
func (b *timelineBuilder) text(h tapefmt.Hash, body []byte, render func([]byte) string) string {
	if s, ok := b.texts[h]; ok {
		return s
	}
	s := shown(render(body))
	b.texts[h] = s
	return s
}

func (b *timelineBuilder) response(fr *diffview.Frame, p *tapefmt.LLMResponse) error {
	path, provider, req := "?", "", b.calls[p.Call]
	if req != nil {
		path, provider = req.Path, req.Provider
	}
	body, err := b.body(p.Header, p.Body)
	if err != nil {
		return err
	}
	c := llmwire.ResponseUsage(p, b.t.Blob, func() llmwire.Call { return llmwire.RequestCall(req, b.t.Blob) })
	model, u := c.Model, c.Usage
	fr.Signature = fr.Kind + " " + path
	fr.Tokens, fr.Cost, fr.Unpriced, fr.Estimated = u.Total(), c.Cost, c.Unpriced(), c.Estimated
	fr.Latency = time.Duration(max(p.Elapsed, p.Latency))
	fr.Title = fmt.Sprintf("%d %s", p.Status, model)
	if u.Total() > 0 {
		fr.Title += fmt.Sprintf(" · %s%d→%s%d tok", c.Mark(), u.Input, c.Mark(), u.Output)
	}
	switch {
	case p.Error != "":
		fr.Title, fr.Body = "error: "+OneLine(p.Error, 80), p.Error
	case p.Status/100 != 2:
		fr.Body = shown(string(body))
	default:
		fr.Body = b.text(p.Body, body, func(t []byte) string { return llmwire.AnswerText(provider, path, t) })
	}
	return nil
}

func (b *timelineBuilder) toolResult(fr *diffview.Frame, p *tapefmt.ToolResult) error {
	fr.Signature = fr.Kind + " " + b.tools[p.ID]
	fr.Latency = time.Duration(p.Elapsed)
	raw := []byte(p.Result)
	if !p.Body.IsZero() {
		var err error
		if raw, err = b.blob(p.Body); err != nil {
			return err
		}
	}
	fr.Body = jsonText(raw)
	fr.Title = "→ " + OneLine(fr.Body, 80)
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
	fr.Signature = fr.Kind + " " + p.Server + " " + string(p.Direction) + " " + method
	fr.Title = p.Server + " " + string(p.Direction) + " " + method
	fr.Body = indentJSON(raw)
	return nil
}

func (b *timelineBuilder) file(fr *diffview.Frame, p *tapefmt.FileChange) error {
	fr.Signature = fr.Kind + " " + p.Where()
	fr.Title = fmt.Sprintf("%s %s", p.Op, p.Where())
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
	data, err := b.t.Blob(h)
	return shown(data), err
}

// body reads a request or response body, decoded by its headers when it
// was stored compressed, whole: it is parsed before anything is cut.
func (b *timelineBuilder) body(h http.Header, hash tapefmt.Hash) ([]byte, error) {
	_, d, err := readBody(b.t, h, hash)
	return d.Text, err
}

// readBody reads blob hash of t and decodes it by the headers h, whole;
// it returns the stored bytes too. The timeline's frame detail and diff's
// timelines both read bodies so, and cut only what they made of it: a
// body cut before it is parsed (its JSON broken) would show as empty.
func readBody(t *tapefmt.Tape, h http.Header, hash tapefmt.Hash) ([]byte, llmwire.DecodedBody, error) {
	if hash.IsZero() {
		return nil, llmwire.DecodedBody{}, nil
	}
	b, err := t.Blob(hash)
	return b, llmwire.DecodeBody(h, b), err
}

// maxShownBody bounds the bytes of one text that a diff timeline holds;
// the rest is left out (the tape keeps it all).
const maxShownBody = 1 << 20

// shown is at most maxShownBody bytes of data.
func shown[T ~string | ~[]byte](data T) T {
	if len(data) > maxShownBody {
		return data[:maxShownBody]
	}
	return data
}
