package timeline

import "testing"

// TestUSD: costs under a thousandth keep at least two significant digits: one under
// half a millionth printed as "$0.", a 1-token embedding's cost.
func TestUSD(t *testing.T) {
	for c, want := range map[float64]string{
		0: "$0", 4e-8: "$0.00000004", 2.9e-5: "$0.000029", 3e-5: "$0.00003", 3.69e-4: "$0.000369",
		0.0096: "$0.0096", 1.5: "$1.50", 250: "$250", 1e-20: "$1.0e-20",
	} {
		if got := USD(c); got != want {
			t.Errorf("USD(%g) = %q, want %q", c, got, want)
		}
	}
}
