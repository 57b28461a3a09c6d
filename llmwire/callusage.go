package llmwire

import (
	"cmp"

	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// CallUsage is what one LLM call used and cost, as ResponseUsage finds it.
type CallUsage struct {
	Model  string        // the response's model, else its request's; "" when neither names one
	Usage  tapefmt.Usage // as the provider reported it
	Cost   float64       // US dollars, by prices.Cost; 0 when !Priced
	Priced bool          // the model has a rate, so Cost is known
}

// Unpriced reports a call that used tokens at a price nobody knows: a view
// shows it as unpriced, never as free.
func (c CallUsage) Unpriced() bool { return !c.Priced && c.Usage.Total() > 0 }

// ResponseUsage finds the usage, model and cost of one llm.response, the
// one way that `ls` (timeline.Summarize), the turntable (timeline.Timeline),
// `diff` (timeline.ForDiff) and the live fork counter (engine.Event) all
// use:
//
//   - usage: the frame's when it holds any, else read from the response
//     body, decoded by the response's headers (DecodeBody, ExtractUsage);
//   - model: the frame's, else the body's, else the request's;
//   - cost: prices.Cost of the two.
//
// blob reads the stored body (Tape.Blob); it is called only when the frame
// lacks usage or model. requestModel names the model of the call's request
// ("" when there is none); it is called only when the response names none.
// Either may be nil. A body that cannot be read counts as empty.
func ResponseUsage(resp *tapefmt.LLMResponse, blob func(tapefmt.Hash) ([]byte, error), requestModel func() string) CallUsage {
	c := CallUsage{Model: resp.Model, Usage: resp.Usage}
	if (c.Usage == tapefmt.Usage{} || c.Model == "") && !resp.Body.IsZero() && blob != nil {
		if body, err := blob(resp.Body); err == nil {
			model, u := ExtractUsage(DecodeBody(resp.Header, body).Text)
			c.Model = cmp.Or(c.Model, model)
			if c.Usage == (tapefmt.Usage{}) {
				c.Usage = u
			}
		}
	}
	if c.Model == "" && requestModel != nil {
		c.Model = requestModel()
	}
	c.Cost, c.Priced = prices.Cost(c.Model, c.Usage)
	return c
}
