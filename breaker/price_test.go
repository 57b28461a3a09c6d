package breaker

import (
	"math"
	"testing"
)

func TestCost(t *testing.T) {
	cases := []struct {
		model           string
		in, cached, out int64
		want            float64
		ok              bool
	}{
		{"gpt-4o-mini-2024-07-18", 1_000_000, 0, 1_000_000, 0.75, true},
		{"gpt-4o", 1_000_000, 500_000, 0, 1.25 + 0.625, true},
		{"claude-sonnet-4-5", 1000, 0, 1000, 0.018, true},
		{"my-local-llama", 1000, 0, 1000, 0, false},
	}
	for _, c := range cases {
		got, ok := Cost(c.model, c.in, c.cached, c.out)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Cost(%q) = %v, %v; want %v, %v", c.model, got, ok, c.want, c.ok)
		}
	}
}
