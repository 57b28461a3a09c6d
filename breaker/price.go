package breaker

import "strings"

// rate is what a model costs, in US dollars per million tokens.
type rate struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"` // cached input tokens, when cheaper
}

// rates are list prices per million tokens for common models, matched by
// the longest prefix of the model name. A later issue makes them
// configurable; unknown models cost zero and are reported as unpriced.
var rates = map[string]rate{
	"gpt-4o":            {Input: 2.50, Output: 10.00, Cached: 1.25},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.60, Cached: 0.075},
	"gpt-4.1":           {Input: 2.00, Output: 8.00, Cached: 0.50},
	"gpt-4.1-mini":      {Input: 0.40, Output: 1.60, Cached: 0.10},
	"gpt-5":             {Input: 1.25, Output: 10.00, Cached: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2.00, Cached: 0.025},
	"o3":                {Input: 2.00, Output: 8.00, Cached: 0.50},
	"claude-opus-4":     {Input: 15.00, Output: 75.00, Cached: 1.50},
	"claude-sonnet-4":   {Input: 3.00, Output: 15.00, Cached: 0.30},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, Cached: 0.08},
	"claude-haiku-4":    {Input: 1.00, Output: 5.00, Cached: 0.10},
	"demo-large":        {Input: 3.00, Output: 15.00},
	"demo-small":        {Input: 0.25, Output: 1.25},
	"text-embedding-3-": {Input: 0.02},
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

// Cost is the price of one call: input tokens (less cached ones) and output
// tokens times the model's rates. ok is false for a model without a rate.
func Cost(model string, input, cached, output int64) (usd float64, ok bool) {
	r, ok := rateFor(model)
	if !ok {
		return 0, false
	}
	cachedRate := r.Cached
	if cachedRate == 0 {
		cachedRate = r.Input
	}
	fresh := max(input-cached, 0)
	return (float64(fresh)*r.Input + float64(cached)*cachedRate + float64(output)*r.Output) / 1e6, true
}
