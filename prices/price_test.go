package prices

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

func TestCost(t *testing.T) {
	cases := []struct {
		model string
		u     tapefmt.Usage
		want  float64
		ok    bool
	}{
		{"gpt-4o-mini-2024-07-18", tapefmt.Usage{Input: 1_000_000, Output: 1_000_000}, 0.75, true},
		// OpenAI: the cached tokens are among the input tokens.
		{"gpt-4o", tapefmt.Usage{Input: 1_000_000, Cached: 500_000}, 1.25 + 0.625, true},
		{"claude-sonnet-4-5", tapefmt.Usage{Input: 1000, Output: 1000}, 0.018, true},
		// Anthropic: cache reads are apart from the input tokens.
		{"claude-sonnet-4-5", tapefmt.Usage{Input: 1_000_000, Cached: 1_000_000}, 3.00 + 0.30, true},
		// Anthropic: cache writes cost their own rate (3.75 a million for
		// Sonnet), beside input, cache reads and output.
		{"claude-sonnet-4-5", tapefmt.Usage{Input: 1_000_000, Cached: 1_000_000, CacheWrite: 1_000_000, Output: 1_000_000}, 3.00 + 0.30 + 3.75 + 15.00, true},
		// A model without a cache-write price: the input rate.
		{"demo-large", tapefmt.Usage{CacheWrite: 1_000_000}, 3.00, true},
		// A rate without a cheaper cached price charges the input rate.
		{"demo-large", tapefmt.Usage{Input: 1_000_000, Cached: 400_000}, 3.00, true},
		// Reasoning tokens are part of the output and are not added again.
		{"o3", tapefmt.Usage{Output: 1_000_000, Reasoning: 900_000}, 8.00, true},
		{"my-local-llama", tapefmt.Usage{Input: 1000, Output: 1000}, 0, false},
		{"", tapefmt.Usage{Input: 1000}, 0, false},
	}
	for _, c := range cases {
		got, ok := Cost(c.model, c.u)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cost(%q, %+v) = %v, %v; want %v, %v", c.model, c.u, got, ok, c.want, c.ok)
		}
	}
}

// TestVariants: a dated or tagged model is priced as its base model; a
// different model whose name merely starts the same is not.
func TestVariants(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o-2024-11-20":          "gpt-4o",
		"gpt-4o-mini-2024-07-18":     "gpt-4o-mini",
		"claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
		"claude-opus-4-1-20250805":   "claude-opus-4-1",
		"gpt-5.5-2026-04-23":         "gpt-5.5",
		"claude-3-5-haiku-latest":    "claude-3-5-haiku", // the aliases the providers' own examples use
		"claude-3-7-sonnet-latest":   "claude-3-7-sonnet",
		"o3-pro":                     "",
		"gpt-4o-audio-preview":       "",
		"gpt-4o-latest-preview":      "",
	} {
		got, known := RateOf(model)
		base, baseKnown := RateOf(want)
		if known != (want != "") || (known && (!baseKnown || got != base)) {
			t.Errorf("%s: rate %+v (known %v), want %s's", model, got, known, want)
		}
	}
}

// TestLoad: a table in LiteLLM's format extends and overrides the
// embedded one, or replaces it; a malformed one is an error naming it.
func TestLoad(t *testing.T) {
	t.Cleanup(func() { // back to the embedded table
		table.Store(nil)
	})
	path := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(path, []byte(`{"sample_spec": {"input_cost_per_token": 0}, "my-local-llama": {"input_cost_per_token": 1e-07, "output_cost_per_token": 2e-07, "litellm_provider": "ollama"},
		"gpt-4o": {"input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06}}`), 0o644)
	if err := Load(path, false); err != nil {
		t.Fatal(err)
	}
	if usd, ok := Cost("my-local-llama", tapefmt.Usage{Input: 1e6, Output: 1e6}); !ok || math.Abs(usd-0.3) > 1e-9 {
		t.Errorf("an added model: %v %v", usd, ok)
	}
	if usd, _ := Cost("gpt-4o", tapefmt.Usage{Input: 1e6}); math.Abs(usd-1) > 1e-9 {
		t.Errorf("an overridden model: %v", usd)
	}
	if _, ok := Cost("claude-haiku-4-5", tapefmt.Usage{Input: 1}); !ok {
		t.Error("extending dropped the embedded models")
	}
	if err := Load(path, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := Cost("claude-haiku-4-5", tapefmt.Usage{Input: 1}); ok {
		t.Error("replacing kept the embedded models")
	}
	os.WriteFile(path, []byte(`{"m": {"input_cost_per_token": "cheap"}}`), 0o644)
	if err := Load(path, false); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a malformed table: %v", err)
	}
	// An entry giving one price of a model the table prices keeps the
	// others: giving gpt-4o-mini's output price alone made its input free.
	table.Store(nil)
	in, _ := Cost("gpt-4o-mini", tapefmt.Usage{Input: 1e6})
	os.WriteFile(path, []byte(`{"gpt-4o-mini": {"output_cost_per_token": 1e-06}}`), 0o644)
	if err := Load(path, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := Cost("gpt-4o-mini", tapefmt.Usage{Input: 1e6}); in == 0 || math.Abs(got-in) > 1e-12 {
		t.Errorf("the input price of a model whose output price alone was given: $%v, want the table's $%v", got, in)
	}
	if got, _ := Cost("gpt-4o-mini", tapefmt.Usage{Output: 1e6}); math.Abs(got-1) > 1e-9 {
		t.Errorf("the output price given: $%v, want $1", got)
	}
}

// TestWindowAndPromptTokens: the context window comes from the table's
// max_input_tokens, a dated variant included; the prompt's tokens add
// Anthropic's cache reads and writes, which its input count leaves out.
func TestWindowAndPromptTokens(t *testing.T) {
	for model, want := range map[string]int64{"gpt-4o": 128000, "gpt-4o-2024-11-20": 128000, "claude-sonnet-4-5": 200000, "my-local-model": 0} {
		if got, known := Window(model); got != want || known != (want > 0) {
			t.Errorf("Window(%q) = %d, %v; want %d", model, got, known, want)
		}
	}
	u := tapefmt.Usage{Input: 100, Cached: 1000, CacheWrite: 50, Output: 7}
	if got := PromptTokens("claude-sonnet-4-5", u); got != 1150 {
		t.Errorf("anthropic prompt tokens %d, want 1150", got)
	}
	if got := PromptTokens("gpt-4o", u); got != 100 {
		t.Errorf("openai prompt tokens %d, want 100 (cached ones are among them)", got)
	}
}
