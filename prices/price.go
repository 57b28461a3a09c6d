package prices

import (
	"cmp"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// rate is what a model costs, in US dollars per million tokens.
type rate struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"` // cached input tokens, when cheaper
	// CacheApart says the provider counts cache reads apart from input
	// tokens (Anthropic), rather than among them (OpenAI).
	CacheApart bool `json:"cache_apart,omitempty"`
}

// rates are list prices per million tokens for common models, matched by
// the longest prefix of the model name. A later issue makes them
// configurable; a model without a rate is unpriced (Cost says so).
var rates = map[string]rate{
	"gpt-4o":            {Input: 2.50, Output: 10.00, Cached: 1.25},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.60, Cached: 0.075},
	"gpt-4.1":           {Input: 2.00, Output: 8.00, Cached: 0.50},
	"gpt-4.1-mini":      {Input: 0.40, Output: 1.60, Cached: 0.10},
	"gpt-5":             {Input: 1.25, Output: 10.00, Cached: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2.00, Cached: 0.025},
	"o3":                {Input: 2.00, Output: 8.00, Cached: 0.50},
	"claude-opus-4":     {Input: 15.00, Output: 75.00, Cached: 1.50, CacheApart: true},
	"claude-sonnet-4":   {Input: 3.00, Output: 15.00, Cached: 0.30, CacheApart: true},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, Cached: 0.08, CacheApart: true},
	"claude-haiku-4":    {Input: 1.00, Output: 5.00, Cached: 0.10, CacheApart: true},
	"demo-large":        {Input: 3.00, Output: 15.00},
	"demo-small":        {Input: 0.25, Output: 1.25},
	"text-embedding-3-": {Input: 0.02},
}

// Rate is what a model costs, in US dollars per million tokens, as Cost
// prices it: input, output, and cached input tokens.
type Rate struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached"`
}

// RateOf is the rate Cost uses for model; known is false for a model
// without one.
func RateOf(model string) (r Rate, known bool) {
	rt, ok := rateFor(model)
	if !ok {
		return Rate{}, false
	}
	return Rate{Input: rt.Input, Output: rt.Output, Cached: cmp.Or(rt.Cached, rt.Input)}, true
}

// rateFor returns the rate of the longest prefix of model in rates.
func rateFor(model string) (rate, bool) {
	best, found := "", false
	for prefix := range rates {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best, found = prefix, true
		}
	}
	return rates[best], found
}

// Cost is the price of one LLM call in US dollars: uncached input tokens,
// cached input tokens and output tokens, each times the model's rate (a
// model without a cheaper cached rate pays its input rate for them).
// Reasoning tokens are part of the output count and are not added again.
//
// Cached tokens are counted as the provider reports them, and providers
// differ: OpenAI's prompt (input) tokens include the cached ones, so
// uncached input is Input minus Cached; Anthropic's input tokens exclude
// cache reads, so uncached input is Input itself and Cached is added to
// it. The rate table says which rule a model follows.
//
// known is false for a model without a rate, including ""; usd is 0 then
// and the caller must show the call as unpriced, never as free.
func Cost(model string, u tapefmt.Usage) (usd float64, known bool) {
	r, ok := rateFor(model)
	if !ok {
		return 0, false
	}
	cachedRate := r.Cached
	if cachedRate == 0 {
		cachedRate = r.Input
	}
	fresh := u.Input
	if !r.CacheApart {
		fresh = max(u.Input-u.Cached, 0)
	}
	return (float64(fresh)*r.Input + float64(u.Cached)*cachedRate + float64(u.Output)*r.Output) / 1e6, true
}
