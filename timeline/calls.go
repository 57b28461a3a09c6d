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
	type pending struct {
		req *tapefmt.LLMRequest
		rec CallRecord
	}
	var out []CallRecord
	reqs := map[uint64]pending{}
	step, lastTurn := 0, ""
	for f, err := range t.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindStep, tapefmt.KindAgentTurn) {
		if err != nil {
			return out, err
		}
		p, err := f.Decode()
		if err != nil {
			return out, err
		}
		switch p := p.(type) {
		case *tapefmt.Step:
			step++
		case *tapefmt.AgentTurn:
			lastTurn = cmp.Or(p.Agent, lastTurn)
		case *tapefmt.LLMRequest:
			reqs[p.Call] = pending{req: p, rec: CallRecord{Call: p.Call, Frame: int(f.Seq), Time: t.Created().Add(f.Time),
				Provider: p.Provider, Model: p.Model, Step: step, Agent: llmwire.AgentOf(p.Header, lastTurn)}}
		case *tapefmt.LLMResponse:
			pc, ok := reqs[p.Call]
			delete(reqs, p.Call)
			if !ok || llmwire.Refused(p) {
				continue
			}
			r := pc.rec
			u := llmwire.ResponseUsage(p, t.Blob, func() llmwire.Call { return llmwire.RequestCall(pc.req, t.Blob) })
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
			out = append(out, r)
		}
	}
	return out, nil
}
