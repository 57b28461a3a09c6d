package timeline

// What changed since the last call: an LLM request is matched to the
// previous call of its conversation, the latest earlier request with the
// same system prompt whose messages this one's continue. Agents send the
// whole conversation with every call, so the earlier call's messages
// usually begin this one's; an agent that trims or summarises its context
// drops or rewrites the first of them, so the rule is the longest common
// run of messages that ends with the earlier call's last message (two
// messages at least, or all of a shorter call's). The messages after that
// run are new. This finds the turn's additions (the tool results, the
// user's reply) among hundreds of repeated messages, on long runs too; a
// call that continues no earlier one has no previous call, and the frame
// view says so rather than guessing.

import (
	"hash/maphash"
	"slices"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// maxLookback is how many earlier llm.request frames are compared with a
// call, the nearest first; parallel conversations rarely interleave more.
const maxLookback = 64

// promptPrint is a request's context window, hashed: its system prompt and
// each message (role and text).
type promptPrint struct {
	system uint64
	msgs   []uint64
	ok     bool // the body read as a prompt
}

func (tl *Timeline) printOf(system string, msgs []Message) promptPrint {
	p := promptPrint{system: maphash.String(tl.seed, system), msgs: make([]uint64, len(msgs)), ok: true}
	for i, m := range msgs {
		p.msgs[i] = maphash.String(tl.seed, m.Role+"\x00"+m.Text)
	}
	return p
}

// promptAt is the print of the llm.request at frame i, read once.
func (tl *Timeline) promptAt(i int) promptPrint {
	tl.mu.Lock()
	p, ok := tl.prompts[i]
	tl.mu.Unlock()
	if ok {
		return p
	}
	if req, isReq := tl.decode(i).(*tapefmt.LLMRequest); isReq && tl.blobErr(i, req.Body) == nil {
		_, d := tl.body(req.Header, req.Body)
		if w, parsed := llmwire.ParsePrompt(d.Text); parsed {
			msgs := make([]Message, len(w.Messages))
			for j, m := range w.Messages {
				msgs[j] = Message{Role: m.Role, Text: m.Text}
			}
			p = tl.printOf(w.System, msgs)
		}
	}
	tl.mu.Lock()
	if tl.prompts == nil || len(tl.prompts) >= maxCachedRows {
		tl.prompts = map[int]promptPrint{}
	}
	tl.prompts[i] = p
	tl.mu.Unlock()
	return p
}

// since finds the previous call of c's conversation, c being the request
// at frame ri: its frame, and the index of c's first new message. It
// returns -1, 0 when no earlier call (within maxLookback) continues into
// this one: the conversation starts here, or it was rewritten.
func (tl *Timeline) since(ri int, c *CallDetail) (frame, first int) {
	cur := tl.printOf(c.System, c.Messages)
	seen := 0
	for j := ri - 1; j >= 0 && seen < maxLookback; j-- {
		if k, _ := tl.KindAt(j); k != tapefmt.KindLLMRequest {
			continue
		}
		seen++
		if p := tl.promptAt(j); p.ok && p.system == cur.system && len(p.msgs) > 0 {
			if n, ok := continues(p.msgs, cur.msgs); ok {
				return j, n
			}
		}
	}
	return -1, 0
}

// continues reports whether b continues a: a's last messages (two at
// least, or all of a when it has fewer) stand in b as a run, and returns
// the index in b after the last such run.
func continues(a, b []uint64) (int, bool) {
	if len(a) <= len(b) && slices.Equal(a, b[:len(a)]) {
		return len(a), true // the whole earlier call begins this one: the usual case
	}
	need := min(2, len(a))
	for k := len(b) - 1; k >= 0; k-- {
		run := 0
		for run < len(a) && run <= k && b[k-run] == a[len(a)-1-run] {
			run++
		}
		if run >= need {
			return k + 1, true
		}
	}
	return 0, false
}

// fill sets how full the model's context window was: the provider's count
// of prompt tokens when the answer is on the tape, else the estimate from
// the messages' sizes; Window is 0 where the model table does not know
// the model's limit.
func (c *CallDetail) fill() {
	c.Window, _ = prices.Window(c.Model)
	if c.Usage.Input > 0 {
		c.Fill, c.FillCounted = prices.PromptTokens(c.Model, c.Usage), true
		return
	}
	c.Fill = int64((len(c.System) + 3) / 4)
	for _, m := range c.Messages {
		if (m.Role == "system" || m.Role == "developer") && m.Text == c.System {
			continue
		}
		c.Fill += int64(m.Tokens)
	}
}
