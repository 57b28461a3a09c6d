package timeline

// The frame view's model: one frame in full, from the timeline.

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Detail is one frame in full, for the frame view.
type Detail struct {
	Row
	Offset  int64
	Size    int64  // bytes of the frame's record
	Payload []byte // the payload JSON as stored
	Blobs   []BlobRef
	Call    *CallDetail // llm.request and llm.response frames
	Tool    *ToolDetail // tool.call and tool.result frames
	File    *FileDetail // file.change frames
}

// BlobRef names a blob a frame refers to.
type BlobRef struct {
	Role string // body, before
	Hash tapefmt.Hash
	Size int
	Err  error // the blob does not read (a *FrameError): never shown as empty
}

// CallDetail is one LLM call: what the model saw and what it answered.
type CallDetail struct {
	Request, Response int // frame numbers, -1 when not on the tape
	Provider, Method  string
	Path, Model       string
	Stream            bool
	System            string
	Messages          []Message
	Tools             []string
	Params            []string // "name: value" for the sampling parameters set
	Status            int
	Error             string
	Answer            string // the response text, assembled from the stream, then its tool calls
	Usage             tapefmt.Usage
	Cost              float64
	Priced            bool // the model has a rate: Cost is known
	Estimated         bool // the answer reported no usage: Usage was counted from the text
	Latency, Elapsed  time.Duration
	Chunks            tapefmt.Chunks
	RequestErr        error // the request body does not read (a *FrameError): the context is unknown, not empty
	ResponseErr       error // the response body does not read (a *FrameError)
	// RequestCoding and ResponseCoding say whether a body was stored
	// compressed and how decoding it went; the texts above are decoded.
	RequestCoding, ResponseCoding llmwire.Coding
	// Since is the frame of the previous call of this conversation (-1:
	// none, it starts here), and Messages[New:] are new since that call.
	Since, New int
	// Fill is how many tokens the context held: the provider's count when
	// FillCounted, else an estimate from the messages; Window is the
	// model's limit from the price and model table, 0 when unknown.
	Fill, Window int64
	FillCounted  bool
	body         []byte      // the response body, decoded, for Streamed
	stored       []byte      // the response body as stored, when compressed
	header       http.Header // the response headers, to decode a prefix of stored
}

// Message is one message of the context window, with a rough token count
// (a quarter of its bytes: a display estimate, not the provider's count).
type Message struct {
	Role   string
	Text   string
	Tokens int
}

// ToolDetail is a tool call and its result.
type ToolDetail struct {
	Call, Result int // frame numbers, -1 when not on the tape
	ID, Name     string
	Source       string
	Args         string // indented JSON
	Output       string
	IsError      bool
	Elapsed      time.Duration
	Err          error // the result body does not read (a *FrameError)
}

// FileDetail is a file change: the new content and a diff from the old.
type FileDetail struct {
	Op, Path string
	Content  string
	Diff     string // unified diff against the content before, when the tape has it
	Binary   bool
	Err      error // the content or the content before does not read (a *FrameError)
}

// Detail reads frame i in full: payload, blobs and, for calls and tools,
// the other half of the pair.
func (tl *Timeline) Detail(i int) (*Detail, error) {
	r := tl.Row(i)
	if r.Err != nil {
		return nil, tl.noteDamage(newFrameError(i, "", tapefmt.Hash{}, r.Err))
	}
	f, err := tl.t.Frame(i)
	if err != nil {
		return nil, tl.noteDamage(newFrameError(i, "", tapefmt.Hash{}, err))
	}
	d := &Detail{Row: r, Offset: f.Offset, Size: f.Size(), Payload: f.Payload}
	for j, h := range tapefmt.BlobRefs(r.Payload) {
		if h.IsZero() {
			continue
		}
		ref := BlobRef{Role: blobRole(r.Payload, j), Hash: h}
		b, err := tl.t.Blob(h)
		if e := tl.noteDamage(newFrameError(i, ref.Role, h, err)); e != nil {
			ref.Err = e
		}
		ref.Size = len(b)
		d.Blobs = append(d.Blobs, ref)
	}
	switch p := r.Payload.(type) {
	case *tapefmt.LLMRequest:
		resp, j := tl.response(i, p.Call)
		d.Call = tl.call(p, i, resp, j)
	case *tapefmt.LLMResponse:
		req, j := tl.request(i, p.Call)
		d.Call = tl.call(req, j, p, i)
	case *tapefmt.ToolCall:
		d.Tool = tl.tool(p, i)
	case *tapefmt.ToolResult:
		d.Tool = tl.toolResult(p, i)
	case *tapefmt.FileChange:
		d.File = tl.file(p)
		d.File.Err = tl.blobErr(i, p.Body, p.Before)
	}
	return d, nil
}

func (tl *Timeline) blob(h tapefmt.Hash) []byte {
	if h.IsZero() {
		return nil
	}
	b, _ := tl.t.Blob(h)
	return shown(b)
}

// body reads a request or response body and decodes it by its headers:
// the stored bytes, and the decoded text, whole (the turntable cuts what
// it shows, after parsing, and says so).
func (tl *Timeline) body(h http.Header, hash tapefmt.Hash) ([]byte, llmwire.DecodedBody) {
	b, d, _ := readBody(tl.t, h, hash)
	return b, d
}

func (tl *Timeline) call(req *tapefmt.LLMRequest, ri int, resp *tapefmt.LLMResponse, si int) *CallDetail {
	c := &CallDetail{Request: ri, Response: si, Since: -1}
	if req != nil {
		c.Provider, c.Method, c.Path, c.Model, c.Stream = req.Provider, req.Method, req.Path, req.Model, req.Stream
		_, d := tl.body(req.Header, req.Body)
		c.RequestCoding = d.Coding
		c.RequestErr = tl.blobErr(ri, req.Body)
		if c.parseRequest(d.Text) && c.RequestErr == nil {
			c.Since, c.New = tl.since(ri, c)
		}
	}
	if resp != nil {
		c.Status, c.Error, c.Chunks = resp.Status, resp.Error, resp.Chunks
		c.Latency, c.Elapsed = time.Duration(resp.Latency), time.Duration(resp.Elapsed)
		stored, d := tl.body(resp.Header, resp.Body)
		c.body, c.ResponseCoding = d.Text, d.Coding
		c.ResponseErr = tl.blobErr(si, resp.Body)
		if d.Encoding != "" {
			c.stored, c.header = stored, resp.Header
		}
		c.Answer = llmwire.AnswerText(c.Provider, c.Path, c.body)
		if resp.Status/100 != 2 {
			c.Answer = string(c.body)
		}
		u := tl.usage(si, resp)
		c.Usage, c.Cost, c.Priced, c.Estimated = u.Usage, u.Cost, u.Priced, u.Estimated
		c.Model = cmp.Or(u.Model, c.Model)
	}
	c.fill()
	return c
}

// parseRequest fills the context window from a request body of the OpenAI
// chat or Responses API or the Anthropic Messages API; false for a body
// that is not one (shown whole as one message).
func (c *CallDetail) parseRequest(body []byte) bool {
	p, ok := llmwire.ParsePrompt(body)
	if !ok {
		if len(body) > 0 {
			c.Messages = append(c.Messages, message("body", string(body)))
		}
		return false
	}
	c.Params, c.Tools, c.System = p.Params, p.Tools, p.System
	for _, m := range p.Messages {
		c.Messages = append(c.Messages, message(m.Role, m.Text))
	}
	return true
}

func message(role, text string) Message {
	return Message{Role: role, Text: text, Tokens: (len(text) + 3) / 4}
}

// Streamed returns the response text as it stood elapsed after the request
// was sent, from the recorded chunk times, and whether it was complete.
func (c *CallDetail) Streamed(elapsed time.Duration) (string, bool) {
	if len(c.Chunks) == 0 {
		if elapsed >= max(c.Latency, c.Elapsed) {
			return c.Answer, true
		}
		return "", false
	}
	end := int64(0)
	for _, ch := range c.Chunks {
		if time.Duration(ch.At) > elapsed {
			break
		}
		end = ch.End
	}
	// Chunk ends count stored bytes: a compressed stream's prefix is
	// decoded as far as it goes.
	stored := c.body
	if c.stored != nil {
		stored = c.stored
	}
	if end >= int64(len(stored)) {
		return c.Answer, true
	}
	part := stored[:end]
	if c.stored != nil {
		part = llmwire.DecodeBody(c.header, part).Text
	}
	return llmwire.ResponseText(part), false
}

func (tl *Timeline) tool(p *tapefmt.ToolCall, i int) *ToolDetail {
	d := &ToolDetail{Call: i, Result: -1, ID: p.ID, Name: p.Name, Source: string(p.Source), Args: indentJSON(p.Args)}
	for j := i + 1; j < min(tl.Len(), i+pairWindow); j++ {
		if k, _ := tl.KindAt(j); k == tapefmt.KindToolResult {
			if r, ok := tl.decode(j).(*tapefmt.ToolResult); ok && r.ID == p.ID {
				tl.fillResult(d, r, j)
				break
			}
		}
	}
	return d
}

func (tl *Timeline) toolResult(p *tapefmt.ToolResult, i int) *ToolDetail {
	d := &ToolDetail{Call: -1, ID: p.ID}
	for j := i - 1; j >= max(0, i-pairWindow); j-- {
		if k, _ := tl.KindAt(j); k == tapefmt.KindToolCall {
			if c, ok := tl.decode(j).(*tapefmt.ToolCall); ok && c.ID == p.ID {
				d = tl.tool(c, j)
				break
			}
		}
	}
	tl.fillResult(d, p, i)
	return d
}

func (tl *Timeline) fillResult(d *ToolDetail, r *tapefmt.ToolResult, i int) {
	raw := []byte(r.Result)
	if !r.Body.IsZero() {
		raw = tl.blob(r.Body)
		d.Err = tl.blobErr(i, r.Body)
	}
	d.Result, d.Output, d.IsError, d.Elapsed = i, jsonText(raw), r.IsError, time.Duration(r.Elapsed)
}

func (tl *Timeline) file(p *tapefmt.FileChange) *FileDetail {
	d := &FileDetail{Op: string(p.Op), Path: p.Where()}
	// The content whole, then cut to what is shown at a character's edge:
	// cut first, a file over 1 MiB was "1048576 bytes of binary data"
	// (its size the cut's, a text taken for binary where the cut split
	// a character) and its diff ended as if the file did.
	full, fullBefore := tl.whole(p.Body), tl.whole(p.Before)
	body, before := cutText(full), cutText(fullBefore)
	if isBinary(body) || isBinary(before) {
		d.Binary = true
		d.Content = fmt.Sprintf("(%d bytes of binary data)", len(full))
		return d
	}
	d.Content = string(body)
	if p.Target != "" {
		d.Content = "→ " + p.Target
	}
	cut := ""
	if len(body) < len(full) || len(before) < len(fullBefore) {
		cut = fmt.Sprintf("\n… cut here: the content is %d bytes (before, %d), shown up to %d; the tape holds it whole (jukebox show --full)",
			len(full), len(fullBefore), maxShownBody)
		d.Content += cut
	}
	if !p.Before.IsZero() || p.Op == tapefmt.OpWrite {
		from := "a/" + p.Where()
		if p.Before.IsZero() {
			from = "/dev/null" // a new file, as diff -u and git write it
		}
		d.Diff = diffview.TextDiff(from, "b/"+p.Where(), string(before), string(body)) + cut
	}
	return d
}

// whole is a blob's content, all of it (nil for none or one that does
// not read).
func (tl *Timeline) whole(h tapefmt.Hash) []byte {
	if h.IsZero() {
		return nil
	}
	b, _ := tl.t.Blob(h)
	return b
}

// cutText is b cut to what is shown, at a character's edge.
func cutText(b []byte) []byte {
	c := shown(b)
	if len(c) == len(b) {
		return c
	}
	for range utf8.UTFMax - 1 {
		if r, size := utf8.DecodeLastRune(c); r != utf8.RuneError || size != 1 {
			break
		}
		c = c[:len(c)-1]
	}
	return c
}

func isBinary(b []byte) bool { return !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 }
