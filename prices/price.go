package prices

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// models.json is the embedded price table, in LiteLLM's format
// (model_prices_and_context_window.json); its sample_spec says where each
// figure comes from and when it was read.
//
//go:embed models.json
var embedded []byte

// Entry is one model of a price table, with LiteLLM's field names: dollars
// per token. Fields the table holds but Cost does not use are ignored.
type Entry struct {
	InputCostPerToken      float64 `json:"input_cost_per_token"`
	OutputCostPerToken     float64 `json:"output_cost_per_token"`
	CacheReadInputCost     float64 `json:"cache_read_input_token_cost"`
	CacheCreationInputCost float64 `json:"cache_creation_input_token_cost"`
	Provider               string  `json:"litellm_provider"`
	Mode                   string  `json:"mode"`
	MaxInputTokens         int64   `json:"max_input_tokens"`
	MaxOutputTokens        int64   `json:"max_output_tokens"`
	Source                 string  `json:"source"`
}

// cacheApart reports whether the provider counts cache reads apart from
// the input tokens (Anthropic), rather than among them (OpenAI, Google).
func (e Entry) cacheApart() bool {
	return e.Provider == "anthropic" || e.Provider == "bedrock" || e.Provider == "vertex_ai-anthropic_models"
}

// table is the price table Load made; nil until then, when the embedded
// one is in use. fromFile are the names its file gave.
var (
	table    atomic.Pointer[map[string]Entry]
	fromFile atomic.Pointer[map[string]bool]
)

// embeddedTable is the embedded table, parsed on first use rather than at
// package initialisation: a command that prices nothing (jukebox
// --version) never pays for it.
var embeddedTable = sync.OnceValue(func() map[string]Entry {
	t, err := parse(embedded, nil)
	if err != nil {
		panic("prices: the embedded table: " + err.Error())
	}
	return t
})

// current is the price table in use: what Load made, else the embedded one.
func current() map[string]Entry {
	if t := table.Load(); t != nil {
		return *t
	}
	return embeddedTable()
}

// parse reads a table in LiteLLM's format; its sample_spec entry and
// entries that price nothing by the token (images, searches) are left out.
// An entry of a model base prices keeps base's prices for the fields it
// does not give (over).
func parse(raw []byte, base map[string]Entry) (map[string]Entry, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	out := make(map[string]Entry, len(all))
	for name, v := range all {
		if name == "sample_spec" {
			continue
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(v))
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		if base != nil {
			e = over(base[name], e, v)
		}
		if e.InputCostPerToken < 0 || e.OutputCostPerToken < 0 || e.CacheReadInputCost < 0 {
			return nil, fmt.Errorf("model %q: a negative price", name)
		}
		if e.InputCostPerToken == 0 && e.OutputCostPerToken == 0 {
			continue
		}
		out[name] = e
	}
	return out, nil
}

// over is e, a file's entry for a model the table priced as was, with
// was's prices for the fields the entry's JSON (raw) does not give: an
// entry giving the output price alone priced the input at nothing.
func over(was, e Entry, raw []byte) Entry {
	var given map[string]json.RawMessage
	if json.Unmarshal(raw, &given) != nil || was == (Entry{}) {
		return e
	}
	keep := func(key string, dst *float64, from float64) {
		if _, ok := given[key]; !ok {
			*dst = from
		}
	}
	keep("input_cost_per_token", &e.InputCostPerToken, was.InputCostPerToken)
	keep("output_cost_per_token", &e.OutputCostPerToken, was.OutputCostPerToken)
	keep("cache_read_input_token_cost", &e.CacheReadInputCost, was.CacheReadInputCost)
	keep("cache_creation_input_token_cost", &e.CacheCreationInputCost, was.CacheCreationInputCost)
	if _, ok := given["litellm_provider"]; !ok {
		e.Provider = was.Provider
	}
	return e
}

// Load reads a price table in LiteLLM's format from path (LiteLLM's own
// model_prices_and_context_window.json works as it is): its models
// override or extend the embedded table's, or replace the whole table
// when replace is set. It is meant to be called once, before any call is
// priced.
func Load(path string, replace bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var base map[string]Entry
	if !replace {
		base = current()
	}
	more, err := parse(raw, base)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t := more
	if !replace {
		t = maps.Clone(current())
		maps.Copy(t, more)
	}
	names := make(map[string]bool, len(more))
	for n := range more {
		names[n] = true
	}
	fromFile.Store(&names)
	table.Store(&t)
	return nil
}

// lookup returns the entry of model under the first of its names (names:
// itself, without a provider prefix, as Bedrock names it) that the table
// prices: the name itself, else the longest name in the table of which it
// is a dated or tagged variant: the name, then "-" and a digit, "@" or ":",
// or the alias "-latest" (gpt-4o-2024-11-20 is gpt-4o,
// claude-sonnet-4-5-20250929 is claude-sonnet-4-5, Anthropic's
// claude-3-5-haiku-latest and Mistral's mistral-large-latest the models
// they name; o3-mini is not o3).
func lookup(model string) (string, Entry, bool) {
	t := current()
	for _, name := range names(model) {
		if key, ok := lookupName(t, name); ok {
			return key, t[key], true
		}
	}
	return "", Entry{}, false
}

// lookupName is the name model is priced under in t.
func lookupName(t map[string]Entry, model string) (string, bool) {
	if _, ok := t[model]; ok {
		return model, true
	}
	best, found := "", false
	for name := range t {
		if variantOf(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return best, found
}

func variantOf(model, name string) bool {
	rest, ok := strings.CutPrefix(model, name)
	if !ok || rest == "" {
		return false
	}
	switch rest[0] {
	case '@', ':':
		return true
	case '-':
		return len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9' || rest == "-latest"
	}
	return false
}

// Rate is what a model costs, in US dollars per million tokens, as Cost
// prices it: input, output, cached input tokens and tokens written to the
// cache.
type Rate struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	Cached     float64 `json:"cached"`
	CacheWrite float64 `json:"cache_write"`
}

// PerMillion is a tape's rate (dollars per token) in dollars per million
// tokens, a cache price of 0 written as the input price it stands for.
func PerMillion(r tapefmt.Rate) Rate {
	cached, write := r.CacheRead, r.CacheWrite
	if cached == 0 {
		cached = r.Input
	}
	if write == 0 {
		write = r.Input
	}
	return Rate{Input: r.Input * 1e6, Output: r.Output * 1e6, Cached: cached * 1e6, CacheWrite: write * 1e6}
}

// RateOf is the rate Cost uses for model; known is false for a model
// without one.
func RateOf(model string) (r Rate, known bool) {
	t, ok := TapeRate(model)
	if !ok {
		return Rate{}, false
	}
	return PerMillion(t), true
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
// it. The table's litellm_provider says which rule a model follows.
// Tokens written to the cache (CacheWrite, Anthropic's
// cache_creation_input_tokens, outside its input tokens too) cost
// cache_creation_input_token_cost, else the input rate. The arithmetic is
// tapefmt.Rate.Cost, which prices a call by the rate a tape recorded.
//
// known is false for a model without a rate, including ""; usd is 0 then
// and the caller must show the call as unpriced, never as free.
func Cost(model string, u tapefmt.Usage) (usd float64, known bool) {
	r, ok := TapeRate(model)
	if !ok {
		return 0, false
	}
	return r.Cost(u), true
}

// TapeRate is model's rate as a tape records it (llm.response rate), with
// where it came from: the built-in table, or a file Load read.
func TapeRate(model string) (tapefmt.Rate, bool) {
	name, e, ok := lookup(model)
	if !ok {
		return tapefmt.Rate{}, false
	}
	src := tapefmt.RateTable
	if f := fromFile.Load(); f != nil && (*f)[name] {
		src = tapefmt.RateFile
	}
	return tapefmt.Rate{Input: e.InputCostPerToken, Output: e.OutputCostPerToken, CacheRead: e.CacheReadInputCost,
		CacheWrite: e.CacheCreationInputCost, CacheApart: e.cacheApart(), Source: src}, true
}

// Window is model's context window: the most input tokens it takes (the
// table's max_input_tokens); known is false where the table does not say.
func Window(model string) (tokens int64, known bool) {
	_, e, ok := lookup(model)
	if !ok || e.MaxInputTokens <= 0 {
		return 0, false
	}
	return e.MaxInputTokens, true
}

// PromptTokens is how many tokens a call's context held, from the
// provider's usage: OpenAI's and Google's input tokens include the cached
// ones; Anthropic's leave out cache reads and writes, which are added
// (the rule Cost follows, by the table's provider; a model the table does
// not know counts its input tokens alone).
func PromptTokens(model string, u tapefmt.Usage) int64 {
	if _, e, ok := lookup(model); ok && e.cacheApart() {
		return u.Input + u.Cached + u.CacheWrite
	}
	return u.Input
}
