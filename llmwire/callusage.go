package llmwire

import (
	"cmp"
	"strings"

	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// CallUsage is what one LLM call used and cost, as ResponseUsage finds it.
type CallUsage struct {
	Model  string        // the response's model, else its request's; "" when neither names one
	Usage  tapefmt.Usage // as the provider reported it, else as counted (Estimated)
	Cost   float64       // US dollars, by prices.Cost; 0 when !Priced
	Priced bool          // the model has a rate, so Cost is known
	// Estimated says the answer reported no usage, so Usage was counted
	// from the request's and the answer's text (estimateUsage): views
	// show its tokens and cost with a "~", and the breaker counts them.
	Estimated bool
}

// Unpriced reports a call that used tokens at a price nobody knows: a view
// shows it as unpriced, never as free.
func (c CallUsage) Unpriced() bool { return !c.Priced && c.Usage.Total() > 0 }

// Mark is "~" for a call whose usage was estimated, else "": what a view
// puts before its token count and cost.
func (c CallUsage) Mark() string {
	if c.Estimated {
		return "~"
	}
	return ""
}

// TripPrefix begins the error of a call the circuit breaker refused, on
// the wire and in its llm.response frame.
const TripPrefix = "jukebox: circuit breaker tripped"

// Refused reports a call the circuit breaker refused: never sent, so
// neither a call the run made nor one with a cost.
func Refused(resp *tapefmt.LLMResponse) bool {
	return resp.Status == 400 && strings.HasPrefix(resp.Error, TripPrefix)
}

// Call is what ResponseUsage needs of a call's request.
type Call struct {
	Provider string // llm.request's provider key: how to read the answer (ReadUsage)
	Path     string // the request path
	Model    string // the request's model: its body's, else its path's (PathModel)
	Body     []byte // the request body, decoded (DecodeBody): counted when the answer reports no usage
}

// RequestCall is the Call of an llm.request frame, its body read by blob
// and decoded; a nil req, or a body blob cannot read, leaves those parts
// empty.
func RequestCall(req *tapefmt.LLMRequest, blob func(tapefmt.Hash) ([]byte, error)) Call {
	if req == nil {
		return Call{}
	}
	c := Call{Provider: req.Provider, Path: req.Path, Model: cmp.Or(req.Model, PathModel(req.Provider, req.Path))}
	if !req.Body.IsZero() && blob != nil {
		if b, err := blob(req.Body); err == nil {
			c.Body = DecodeBody(req.Header, b).Text
		}
	}
	return c
}

// Free says whether a call to path uses no tokens: the providers' token
// counting endpoints (Anthropic's /v1/messages/count_tokens, OpenAI's
// /v1/responses/input_tokens, Gemini's models/M:countTokens, Bedrock's
// /model/M/count-tokens), which bill nothing. Its usage is none, and the
// circuit breaker does not weigh it.
func Free(path string) bool {
	path, _, _ = strings.Cut(path, "?")
	for _, s := range []string{"/messages/count_tokens", "/responses/input_tokens", ":countTokens", "/count-tokens"} {
		if strings.HasSuffix(path, s) {
			return true
		}
	}
	return false
}

// ResponseUsage finds the usage, model and cost of one llm.response, the
// one way that `ls` (timeline.Summarize), the turntable (timeline.Timeline),
// `diff` (timeline.ForDiff), the OTel export, the breaker and the live
// fork counter (engine.Event) all use:
//
//   - usage: the frame's when it holds any, else read from the response
//     body, decoded by the response's headers, in the call's provider's
//     format (DecodeBody, ReadUsage), else, for a successful answer,
//     counted from the request's and the answer's text (Estimated);
//   - model: the frame's, else the body's, else the request's;
//   - cost: at the rate the frame recorded (tapefmt.Rate, the price in
//     force when the call was made live), else prices.Cost of the two.
//
// blob reads the stored body (Tape.Blob); it is called only when the frame
// lacks usage or model. request gives the call's request (RequestCall);
// it is called only when the frame lacks usage or model. Either may be
// nil. A body that cannot be read counts as empty.
func ResponseUsage(resp *tapefmt.LLMResponse, blob func(tapefmt.Hash) ([]byte, error), request func() Call) CallUsage {
	return responseUsage(resp, blob, request, nil)
}

// answer is what ResponseUsage reads of an answer's body: the model and
// usage it names, and (when it names no usage) the tokens of what the
// model said.
type answer struct {
	model  string
	usage  tapefmt.Usage
	output int64
}

// readAnswer reads resp's body as ResponseUsage does; model is the one a
// count of the output tokens uses when the body names neither.
func readAnswer(resp *tapefmt.LLMResponse, blob func(tapefmt.Hash) ([]byte, error), call Call) answer {
	var a answer
	var body []byte
	if blob != nil {
		// A live answer not on a tape yet has no hash: its blob func gives
		// the body whatever it is asked (the breaker's, engine.answerOf).
		if raw, err := blob(resp.Body); err == nil && len(raw) > 0 {
			body = DecodeBody(resp.Header, raw).Text
			a.model, a.usage = ReadUsage(call.Provider, call.Path, resp.Header, body)
		}
	}
	if resp.Usage == (tapefmt.Usage{}) && a.usage == (tapefmt.Usage{}) && resp.Status/100 == 2 {
		a.output = answerTokens(cmp.Or(resp.Model, a.model, call.Model), call, body)
	}
	return a
}

func responseUsage(resp *tapefmt.LLMResponse, blob func(tapefmt.Hash) ([]byte, error), request func() Call, memo *UsageMemo) CallUsage {
	c := CallUsage{Model: resp.Model, Usage: resp.Usage}
	if c.Usage != (tapefmt.Usage{}) && c.Model != "" {
		c.Price(resp.Rate)
		return c
	}
	var call Call
	if request != nil {
		call = request()
	}
	if Free(call.Path) {
		// Counting tokens costs none: nothing read, nothing estimated.
		c.Model, c.Usage = cmp.Or(c.Model, call.Model), tapefmt.Usage{}
		c.Price(resp.Rate)
		return c
	}
	a := memo.answer(resp, blob, call)
	c.Model = cmp.Or(c.Model, a.model)
	if c.Usage == (tapefmt.Usage{}) {
		c.Usage = a.usage
	}
	c.Model = cmp.Or(c.Model, call.Model)
	if c.Usage == (tapefmt.Usage{}) && resp.Status/100 == 2 {
		if u := (tapefmt.Usage{Input: estimateInput(c.Model, call), Output: a.output}); u.Total() > 0 {
			c.Usage, c.Estimated = u, true
		}
	}
	c.Price(resp.Rate)
	return c
}

// Price prices c at the rate its tape recorded, else (nil) by the price
// table (prices.Cost).
func (c *CallUsage) Price(recorded *tapefmt.Rate) {
	if recorded != nil {
		c.Cost, c.Priced = recorded.Cost(c.Usage), true
		return
	}
	c.Cost, c.Priced = prices.Cost(c.Model, c.Usage)
}

// UsageMemo keeps what ResponseUsage read of each answer body, by what
// that reading depends on, so that a tape's many answers naming one body
// read and count it once: a 700 KB tape whose thousand answers named one
// 256 MiB blob made jukebox ls of its folder take a minute, the body's
// tokens counted for each. Its zero value is ready; a nil one keeps
// nothing.
type UsageMemo struct{ m map[answerKey]answer }

// answerKey is what readAnswer's result depends on.
type answerKey struct {
	body                  tapefmt.Hash
	status                int
	usage                 tapefmt.Usage
	encoding              string
	provider, path, model string
}

// ResponseUsage is ResponseUsage of resp, whose request is req (nil when
// the tape lacks it), its answer's body read at most once.
func (u *UsageMemo) ResponseUsage(resp *tapefmt.LLMResponse, req *tapefmt.LLMRequest, blob func(tapefmt.Hash) ([]byte, error)) CallUsage {
	return responseUsage(resp, blob, func() Call { return RequestCall(req, blob) }, u)
}

// answer is readAnswer, kept by u.
func (u *UsageMemo) answer(resp *tapefmt.LLMResponse, blob func(tapefmt.Hash) ([]byte, error), call Call) answer {
	if u == nil || resp.Body.IsZero() {
		return readAnswer(resp, blob, call)
	}
	k := answerKey{body: resp.Body, status: resp.Status, usage: resp.Usage, encoding: resp.Header.Get("Content-Encoding"),
		provider: call.Provider, path: call.Path, model: cmp.Or(resp.Model, call.Model)}
	if a, ok := u.m[k]; ok {
		return a
	}
	a := readAnswer(resp, blob, call)
	if u.m == nil {
		u.m = map[answerKey]answer{}
	}
	u.m[k] = a
	return a
}
