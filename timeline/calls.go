package timeline

import (
	"cmp"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// CallRecord is one model call of a run as a table row holds it: what
// `jukebox cost` and `show --json` say of it, by the same readings
// (llmwire.ResponseUsage for tokens, model and cost).
type CallRecord struct {
	Call      uint64        // the call's number on the tape, from 0
	Frame     int           // the request's frame
	Time      time.Time     // when the request was sent
	Provider  string        // the request's provider
	Model     string        // the response's model, else the request's
	Usage     tapefmt.Usage // as reported, else counted (Estimated)
	Cost      float64       // US dollars; 0 when !Priced
	Priced    bool
	Estimated bool
	// Latency is the time to the response head, Elapsed to its last byte
	// and FirstChunk to the first chunk of a streamed answer (0 when not
	// streamed).
	Latency, Elapsed, FirstChunk time.Duration
	Status                       int    // HTTP status; 0 when no answer came
	Error                        string // a reset, timeout or refused connection
	Tools                        []string
	Step                         int    // the step the call was made in, from 0
	Agent                        string // llmwire.AgentOf: the agent header, else the latest agent turn
}

// CallRecords reads the run's model calls in the order they were sent, as
// MakeBill counts them: calls the circuit breaker refused were never sent
// and are left out. A request without an answer (a torn tape) is left out
// too: it has no usage to count.
func CallRecords(t *tapefmt.Tape) ([]CallRecord, error) {
	_, calls, err := SummarizeCalls("", t)
	return calls, err
}

// callReader gathers the call records of a tape as summarize reads it.
type callReader struct {
	out      []CallRecord
	pending  map[uint64]CallRecord // requests awaiting their answer
	step     int
	lastTurn string
}

// frame notes a frame's step, agent turn or request; summarize calls it
// after response, for every frame it reads.
func (c *callReader) frame(t *tapefmt.Tape, f tapefmt.Frame, p tapefmt.Payload) {
	switch p := p.(type) {
	case *tapefmt.Step:
		c.step++
	case *tapefmt.AgentTurn:
		c.lastTurn = cmp.Or(p.Agent, c.lastTurn)
	case *tapefmt.LLMRequest:
		if c.pending == nil {
			c.pending = map[uint64]CallRecord{}
		}
		c.pending[p.Call] = CallRecord{Call: p.Call, Frame: int(f.Seq), Time: t.Created().Add(f.Time),
			Provider: p.Provider, Model: p.Model, Step: c.step, Agent: llmwire.AgentOf(p.Header, c.lastTurn)}
	case *tapefmt.LLMResponse:
		delete(c.pending, p.Call)
	}
}

// response completes the record of an answered call with its usage u.
func (c *callReader) response(t *tapefmt.Tape, p *tapefmt.LLMResponse, u llmwire.CallUsage) {
	r, ok := c.pending[p.Call]
	if !ok {
		return // an answer without its request: a torn tape
	}
	r.Model = cmp.Or(u.Model, r.Model)
	r.Usage, r.Cost, r.Priced, r.Estimated = u.Usage, u.Cost, u.Priced, u.Estimated
	r.Latency, r.Elapsed = time.Duration(p.Latency), time.Duration(p.Elapsed)
	if len(p.Chunks) > 0 {
		r.FirstChunk = time.Duration(p.Chunks[0].At)
	}
	r.Status, r.Error = p.Status, p.Error
	if !p.Body.IsZero() {
		if raw, err := t.Blob(p.Body); err == nil {
			for _, tc := range llmwire.ResponseToolCalls(llmwire.PayloadBody(p, raw).Text) {
				r.Tools = append(r.Tools, tc.Name)
			}
		}
	}
	c.out = append(c.out, r)
}
