package timeline

// What the turntable asks of a timeline beyond its rows: running totals,
// navigation by kind, and text search.

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Totals returns the tokens and cost of every LLM call up to and including
// frame i. The first call over a long stretch of tape decodes the
// llm.response frames in it; later calls are a binary search.
func (tl *Timeline) Totals(i int) (tokens int64, cost float64) {
	tl.ensureCosts(i + 1)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	c := &tl.costs
	n := c.calls(i)
	if n == 0 {
		return 0, 0
	}
	return c.tokens[n-1], c.cost[n-1]
}

// FromParent is, for a fork, the part of Totals(i)'s cost that its
// parent's tape answered: the calls before the fork call, not paid again
// (what the fork spent is the rest, what its circuit breaker counted).
// False for a tape that is no fork.
func (tl *Timeline) FromParent(i int) (float64, bool) {
	if tl.forkCall() < 0 {
		return 0, false
	}
	tl.ensureCosts(i + 1)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	c := &tl.costs
	if n := c.calls(i); n > 0 {
		return c.parent[n-1], true
	}
	return 0, true
}

// forkCall is the call a fork went live at (its run.start's parent call),
// -1 for a tape that is no fork.
func (tl *Timeline) forkCall() int64 {
	tl.mu.Lock()
	call, read := tl.costs.parentCall, tl.costs.forkRead
	tl.mu.Unlock()
	if read {
		return call
	}
	call = -1
	if tl.Len() > 0 {
		if p, ok := tl.readRow(0).Payload.(*tapefmt.RunStart); ok {
			if c, fork := p.ForkCall(); fork {
				call = int64(c)
			}
		}
	}
	tl.mu.Lock()
	tl.costs.parentCall, tl.costs.forkRead = call, true
	tl.mu.Unlock()
	return call
}

// calls is the number of calls in the index up to and including frame i.
func (c *costIndex) calls(i int) int {
	return sort.Search(len(c.frames), func(j int) bool { return int(c.frames[j]) > i })
}

// Unpriced returns how many LLM calls up to and including frame i used
// tokens at no known price: Totals leaves them out of the cost, and a view
// shows the cost as a lower bound ("+?").
func (tl *Timeline) Unpriced(i int) int {
	return tl.countUpTo(i, func(c *costIndex) []int32 { return c.unpriced })
}

// Estimated returns how many LLM calls up to and including frame i had
// their usage counted rather than reported (Row.Estimated): a view shows
// Totals with a "~".
func (tl *Timeline) Estimated(i int) int {
	return tl.countUpTo(i, func(c *costIndex) []int32 { return c.estimated })
}

// countUpTo is a running count of the cost index at frame i.
func (tl *Timeline) countUpTo(i int, of func(*costIndex) []int32) int {
	tl.ensureCosts(i + 1)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	c := &tl.costs
	n := c.calls(i)
	if n == 0 {
		return 0
	}
	return int(of(c)[n-1])
}

// ensureCosts sums the llm.response frames before frame end.
func (tl *Timeline) ensureCosts(end int) {
	end = min(end, tl.Len())
	for {
		tl.mu.Lock()
		from := tl.costs.upto
		tl.mu.Unlock()
		if from >= end {
			return
		}
		to := min(end, from+4096) // release the lock between batches
		tl.sumCosts(from, to)
	}
}

func (tl *Timeline) sumCosts(from, to int) {
	type call struct {
		i                   int
		tokens              int64
		cost                float64
		unpriced, estimated bool
		fromParent          bool
	}
	forkCall := tl.forkCall()
	var found []call
	for i := from; i < to; i++ {
		if k, _ := tl.KindAt(i); k == tapefmt.KindLLMResponse {
			r := tl.readRow(i) // not through the cache: a bulk pass must not evict the screen
			p, ok := r.Payload.(*tapefmt.LLMResponse)
			fromParent := ok && int64(p.Call) < forkCall
			found = append(found, call{i, r.Tokens, r.Cost, !r.Priced && r.Tokens > 0, r.Estimated, fromParent})
		}
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	c := &tl.costs
	if c.upto != from {
		return // another goroutine summed this stretch
	}
	for _, f := range found {
		var tok int64
		var usd, parent float64
		var un, est int32
		if n := len(c.frames); n > 0 {
			tok, usd, parent, un, est = c.tokens[n-1], c.cost[n-1], c.parent[n-1], c.unpriced[n-1], c.estimated[n-1]
		}
		if f.unpriced {
			un++
		}
		if f.estimated {
			est++
		}
		if f.fromParent {
			parent += f.cost
		}
		c.frames, c.tokens, c.cost = append(c.frames, int32(f.i)), append(c.tokens, tok+f.tokens), append(c.cost, usd+f.cost)
		c.parent = append(c.parent, parent)
		c.unpriced, c.estimated = append(c.unpriced, un), append(c.estimated, est)
	}
	c.upto = to
}

// IndexCosts sums every call's tokens and cost, so Totals never waits; run
// it in the background after the first screen. It stops when ctx is done.
func (tl *Timeline) IndexCosts(ctx context.Context) {
	for end := 4096; ctx.Err() == nil; end += 4096 {
		tl.ensureCosts(end)
		if end >= tl.Len() {
			return
		}
	}
}

// CostsIndexed reports whether every call's cost has been summed, so
// Totals of the last frame returns at once.
func (tl *Timeline) CostsIndexed() bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.costs.upto >= tl.Len()
}

// Find says what Next looks for.
type Find uint8

// What Next can look for.
const (
	FindLLM   Find = iota + 1 // an llm.request frame
	FindTool                  // a tool.call or mcp.message frame
	FindError                 // a row with Error set
	FindFork                  // a run.start of a fork, or a breaker.trip
)

// Next returns the next frame after from (dir > 0) or before it (dir < 0)
// that is what f asks for. Kinds come from the index; only candidates for
// an error are decoded.
func (tl *Timeline) Next(from int, f Find, dir int) (int, bool) {
	step := 1
	if dir < 0 {
		step = -1
	}
	for i := from + step; i >= 0 && i < tl.Len(); i += step {
		k, _ := tl.KindAt(i)
		if tl.matches(i, k, f) {
			return i, true
		}
	}
	return from, false
}

func (tl *Timeline) matches(i int, k tapefmt.Kind, f Find) bool {
	switch f {
	case FindLLM:
		return k == tapefmt.KindLLMRequest
	case FindTool:
		return k == tapefmt.KindToolCall || k == tapefmt.KindMCP || k == tapefmt.KindLLMResponse && tl.callsTools(i)
	case FindFork:
		return k == tapefmt.KindBreakerTrip || (k == tapefmt.KindRunStart && tl.Row(i).Fork)
	}
	if tl.damageAt(i) != nil {
		return true // found unreadable by Detail, Search or Check
	}
	switch k {
	case tapefmt.KindLLMResponse, tapefmt.KindToolResult, tapefmt.KindRunEnd, tapefmt.KindBreakerTrip:
		return tl.Row(i).Error
	}
	return false
}

// Search returns the first frame after from (before it when dir < 0),
// wrapping around, whose text holds query, case-insensitively: its summary,
// its payload and the text of its blobs (a request's messages, a response's
// assembled text, file contents). It returns -1 when nothing matches and
// ctx.Err() when cancelled. SearchReport also says which frames it could
// not read.
func (tl *Timeline) Search(ctx context.Context, query string, from, dir int) (int, error) {
	r, err := tl.SearchReport(ctx, query, from, dir)
	return r.Frame, err
}

// SearchResult is what a search found: the frame, or -1, and the frames on
// the way that do not read in full (their text was searched as far as it
// reads), with the first of them.
type SearchResult struct {
	Frame      int
	Unreadable int
	First      *FrameError
}

// SearchReport searches as Search does, and reports the frames it could
// not read instead of passing over them in silence. query is a Query:
// words of text, and field:value terms.
func (tl *Timeline) SearchReport(ctx context.Context, query string, from, dir int) (SearchResult, error) {
	res := SearchResult{Frame: -1}
	q := ParseQuery(query)
	n := tl.Len()
	if n == 0 || q.Empty() {
		return res, nil
	}
	step := 1
	if dir < 0 {
		step = n - 1
	}
	for k, i := 0, (from+step)%n; k < n; k, i = k+1, (i+step)%n {
		if k%256 == 0 && ctx.Err() != nil {
			return SearchResult{Frame: -1}, ctx.Err()
		}
		ok, bad := tl.match(i, q)
		if bad != nil {
			tl.noteDamage(bad)
			if res.Unreadable++; res.First == nil {
				res.First = bad
			}
		}
		if ok {
			res.Frame = i
			return res, nil
		}
	}
	return res, nil
}

// Matches lists every frame query matches, in order, at most limit of
// them (the list stops there; total counts on). It reads the whole tape.
func (tl *Timeline) Matches(ctx context.Context, query string, limit int) (frames []int, total int, err error) {
	q := ParseQuery(query)
	if q.Empty() {
		return nil, 0, nil
	}
	for i := range tl.Len() {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if ok, _ := tl.match(i, q); ok {
			if total++; len(frames) < limit {
				frames = append(frames, i)
			}
		}
	}
	return frames, total, nil
}

// match reports whether frame i is what q asks for: its kind from the
// index first, then its fields, then its text.
func (tl *Timeline) match(i int, q Query) (bool, *FrameError) {
	return tl.matchFrame(i, q, func() (tapefmt.Frame, error) { return tl.t.Frame(i) })
}

// matchFrame is match with the frame's record from read, called only
// when its text is looked at.
func (tl *Timeline) matchFrame(i int, q Query, read func() (tapefmt.Frame, error)) (bool, *FrameError) {
	k, _ := tl.KindAt(i)
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, k) {
		return false, nil
	}
	if q.Class != 0 && classOf(k)&q.Class == 0 && !(q.Class&ClassErrors != 0 && tl.matches(i, k, FindError)) {
		return false, nil
	}
	if q.Model != "" || q.Tool != "" || q.Path != "" || q.Status != 0 {
		r := tl.Row(i)
		if r.Err != nil || !q.fields(r.Payload) {
			return false, nil
		}
	}
	if q.Text == "" {
		return true, nil
	}
	text, bad := tl.lowerText(i, read)
	return bytes.Contains(text, []byte(q.Text)), bad
}

// text is everything Search looks at in frame i (its record from read),
// and why some of it does not read.
func (tl *Timeline) text(i int, read func() (tapefmt.Frame, error)) ([]byte, *FrameError) {
	f, err := read()
	if err != nil {
		return nil, newFrameError(i, "", tapefmt.Hash{}, err)
	}
	p, err := f.Decode()
	if err != nil {
		return f.Payload, newFrameError(i, "", tapefmt.Hash{}, err)
	}
	var bad *FrameError
	out := append([]byte(Describe(p)+"\n"), f.Payload...)
	for j, h := range tapefmt.BlobRefs(p) {
		b, err := tl.t.Blob(h)
		if err != nil && bad == nil {
			bad = newFrameError(i, blobRole(p, j), h, err)
		}
		if err == nil {
			out = append(append(out, '\n'), blobText(p, llmwire.PayloadBody(p, b).Text)...)
		}
	}
	return out, bad
}

// blobText is a blob as a reader sees it.
func blobText(p tapefmt.Payload, b []byte) string {
	switch p.(type) {
	case *tapefmt.LLMRequest:
		return llmwire.RequestText(b)
	case *tapefmt.LLMResponse:
		if t := llmwire.ResponseText(b); t != "" {
			return t
		}
		// Another provider's shape (Gemini, Bedrock, ...): searched as
		// it is, so its words are found.
	}
	if !utf8.Valid(b) {
		return ""
	}
	return string(b)
}

// callsTools reports whether the llm.response at frame i asked for tool
// calls (OpenAI tool_calls, Responses function calls, Anthropic tool_use):
// the tool calls a model makes are in its answers, whatever runs them.
func (tl *Timeline) callsTools(i int) bool {
	tl.mu.Lock()
	known, ok := tl.asks[i]
	tl.mu.Unlock()
	if ok {
		return known
	}
	r := tl.Row(i)
	p, isResp := r.Payload.(*tapefmt.LLMResponse)
	calls := isResp && !p.Body.IsZero() && len(llmwire.ResponseToolCalls(llmwire.DecodeBody(p.Header, tl.blob(p.Body)).Text)) > 0
	tl.mu.Lock()
	if tl.asks == nil {
		tl.asks = map[int]bool{}
	}
	tl.asks[i] = calls
	tl.mu.Unlock()
	return calls
}
