package tapefmt

// Rate is the price a live model call was priced at when it was recorded
// (llm.response key rate), in US dollars per token under LiteLLM's names,
// so that every view of the tape prices it as the circuit breaker did,
// whatever price table or flags it is read with.
type Rate struct {
	Input      float64 `json:"input_cost_per_token"`
	Output     float64 `json:"output_cost_per_token"`
	CacheRead  float64 `json:"cache_read_input_token_cost,omitempty"`     // 0: the input price
	CacheWrite float64 `json:"cache_creation_input_token_cost,omitempty"` // 0: the input price
	// CacheApart says the provider counts cache reads and writes apart
	// from its input tokens (Anthropic); otherwise cached tokens are among
	// them (OpenAI, Google).
	CacheApart bool `json:"cache_apart,omitempty"`
	// Source is where the price came from: RateTable, RateFile or
	// RateUnknownModel.
	Source RateSource `json:"source"`
}

// Cost is what usage u costs at r: uncached input, cached input, tokens
// written to the cache and output, each at its price (a cache price of 0
// is the input price).
func (r Rate) Cost(u Usage) float64 {
	cached, write := r.CacheRead, r.CacheWrite
	if cached == 0 {
		cached = r.Input
	}
	if write == 0 {
		write = r.Input
	}
	fresh := u.Input
	if !r.CacheApart {
		fresh = max(u.Input-u.Cached, 0)
	}
	return float64(fresh)*r.Input + float64(u.Cached)*cached + float64(u.CacheWrite)*write + float64(u.Output)*r.Output
}
