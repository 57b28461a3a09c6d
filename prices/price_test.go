package prices

import (
	"math"
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
