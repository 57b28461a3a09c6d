package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ControlAPIVersion is the version of the control API (controlapi.Version).
const ControlAPIVersion = controlapi.Version

// TokenEnv names the variable that carries the control API's token to
// the agent, beside JUKEBOX_CONTROL (controlapi.TokenEnv).
const TokenEnv = controlapi.TokenEnv

// control is the run as the control API serves it (controlapi.Run), to
// agents and SDKs inside the run and to jukebox mcp
// (docs/control-api.md): turns and markers (here), transactions
// (sdktx.go), MCP sessions (mcpcontrol.go), the end of a served run
// (serve.go). Every request must carry the run's token: the port is open
// to every process of the machine, the token is in the agent's
// environment alone.
type control struct {
	p     *proxy
	token string
	mode  tapefmt.RunMode
	txs   *sdkTxs
	mcp   mcpSessions
	api   *controlapi.Server
	// ctl are the recorded exchanges a replay answers (controltape.go).
	ctl ctlTape
	// onEnd ends a served run (Serve); nil for a run with an agent.
	onEnd func(tapefmt.RunEnd)
	// exchanges counts the exchanges the agent made that go on the tape
	// (turns, markers, transactions, held MCP calls), live or answered
	// from a tape (Result.ControlExchanges).
	exchanges atomic.Int64
	// replayTrip is the recording's trip once a replay (or a fork before
	// its fork point) has answered from the tape a call the breaker
	// refused, or a turn that tripped it: what GET breaker then says, as
	// it said to the recorded agent (which raised BreakerTripped).
	replayTrip atomic.Pointer[breaker.Trip]
}

var _ controlapi.Run = (*control)(nil)

func newControl(p *proxy) *control {
	var b [16]byte
	rand.Read(b[:])
	c := &control{p: p, token: hex.EncodeToString(b[:])}
	c.api = controlapi.NewServer(c, c.token)
	return c
}

// append writes a frame (when the run writes a tape) and returns its
// sequence number.
func (c *control) append(p tapefmt.Payload) (uint64, error) {
	if c.p.tape == nil {
		return 0, nil
	}
	return c.p.tape.Append(0, p)
}

// Info is the run: its mode, tape and calls. While a replay or a fork
// answers from a tape, the tape is that one, whose id the recorded agent
// was told (it was the tape being written): the agent sees what it saw
// then, whether or not the replay writes a tape of its own.
func (c *control) Info(context.Context) (controlapi.Info, error) {
	info := controlapi.Info{API: ControlAPIVersion, Calls: c.p.calls.Load(), Recording: c.p.tape != nil,
		Mode: string(c.mode), Transactions: c.txs.available() || c.answersTx()}
	if t, _ := c.readTape(); t != nil && !c.live() {
		info.TapeID = shownTapeID(t)
	} else if c.p.tape != nil {
		id := c.p.tape.ID()
		info.TapeID = hex.EncodeToString(id[:])
	}
	return info, nil
}

// shownTapeID is the tape id the agent recorded on t was told: the one
// its run.start names (a replay tape's), else t's own.
func shownTapeID(t *tapefmt.Tape) string {
	if start, err := FirstRunStart(t); err == nil && start.ShownTapeID != "" {
		return start.ShownTapeID
	}
	id := t.ID()
	return hex.EncodeToString(id[:])
}

// Marker writes a marker frame.
func (c *control) Marker(_ context.Context, m controlapi.Marker) (controlapi.Frame, error) {
	seq, err := c.append(tapefmt.Marker{Label: m.Label, Note: m.Note})
	return controlapi.Frame{Frame: seq}, err
}

// Turn writes an agent.turn frame; the circuit breaker counts its text
// and reported cost, and a trip comes back in the answer ("breaker") as
// well as on the tape.
func (c *control) Turn(_ context.Context, req controlapi.Turn) (controlapi.TurnAnswer, error) {
	if req.CostUSD < 0 || req.CostUSD > tapefmt.MaxTurnCost {
		return controlapi.TurnAnswer{}, controlapi.BadRequest("cost_usd %g: want a turn's cost, from 0 to %g", req.CostUSD, tapefmt.MaxTurnCost)
	}
	t := tapefmt.AgentTurn(req)
	if t.Agent != "" {
		c.p.agent.Store(&t.Agent) // the agent of the calls that follow without a header
	}
	seq, err := c.append(t)
	if err != nil {
		return controlapi.TurnAnswer{}, err
	}
	out := controlapi.TurnAnswer{Frame: seq}
	if g := c.p.guard; g != nil {
		out.Breaker = g.turn(turnOf(seq, &t, time.Now()), c.p.lastAgent())
	}
	return out, nil
}

// Breaker is the circuit breaker's trip, if any.
func (c *control) Breaker(context.Context) (controlapi.BreakerState, error) {
	var out controlapi.BreakerState
	if g := c.p.guard; g != nil {
		out.Breaker = g.tripped()
	}
	if out.Breaker == nil {
		out.Breaker = c.replayTrip.Load()
	}
	out.Tripped = out.Breaker != nil
	return out, nil
}

// replayedTrip notes the trip behind a refusal a replay answered from the
// tape (llmwire.Refused): its rule and reason, from the recorded error,
// with the cost, tokens, evidence and agent of the recording's own
// breaker.trip frame (the SDK's BreakerTripped said cost 0 and no evidence
// in the replay of a run that printed them, and replay --strict failed).
func (c *control) replayedTrip(r *tapefmt.LLMResponse) {
	if c.replayTrip.Load() != nil {
		return
	}
	rule, reason := tripOf(r.Error)
	trip := &breaker.Trip{Rule: rule, Reason: reason}
	if t, _ := c.readTape(); t != nil {
		if bt := tapedTrip(t, rule, reason); bt != nil {
			trip.Cost, trip.Tokens, trip.Evidence, trip.Agent = bt.Cost, bt.Tokens, bt.Evidence, bt.Agent
		}
	}
	c.replayTrip.CompareAndSwap(nil, trip)
}

// tapedTrip is t's breaker.trip frame of rule and reason (of rule alone
// when none has the reason), nil when it has none.
func tapedTrip(t *tapefmt.Tape, rule, reason string) *tapefmt.BreakerTrip {
	var byRule *tapefmt.BreakerTrip
	for f, err := range t.Frames(tapefmt.KindBreakerTrip) {
		if err != nil {
			break
		}
		p, err := f.Decode()
		bt, ok := p.(*tapefmt.BreakerTrip)
		if err != nil || !ok || bt.Rule != rule {
			continue
		}
		if bt.Reason == reason {
			return bt
		}
		if byRule == nil {
			byRule = bt
		}
	}
	return byRule
}
