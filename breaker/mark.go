package breaker

import (
	"fmt"
	"math"
)

// agentWho is who an agent's breaker follows, in its reasons ("agent
// planner: its calls have cost ...").
const agentWho = "its calls"

// spentText is the cost so far beside limit, each with enough digits to
// differ: "~$0.0012 (some answers ...)" when some of it was counted rather
// than reported.
func (b *Breaker) spentText(limit float64) (spent, cap string) {
	spent, cap = USDPair(b.cost, limit)
	if b.estimated {
		spent = "~" + spent + " (some answers reported no usage: their tokens were counted)"
	}
	return spent, cap
}

// mark is "~" once some usage was counted rather than reported.
func (b *Breaker) mark() string {
	if b.estimated {
		return "~"
	}
	return ""
}

// USD writes an amount in dollars with four decimals, or, under a cent,
// with two significant digits at least ("$0.0012", "$0.000034"): a small
// amount never reads as $0.0000.
func USD(v float64) string {
	if tiny(v) {
		return fmt.Sprintf("$%.2g", v)
	}
	return fmt.Sprintf("$%.*f", decimals(v), v)
}

// tiny reports an amount too small for 12 decimals to show (a cap of
// $1e-300): it is written with an exponent, never as $0.000000000000.
func tiny(v float64) bool { return v != 0 && math.Abs(v) < 1e-10 }

// USDPair writes two amounts (a cost and the limit it is held to) as USD
// does, with as many more decimals as they need to read differently when
// they differ.
func USDPair(a, b float64) (string, string) {
	if tiny(a) || tiny(b) {
		p := 2
		for ; p < 17 && a != b; p++ {
			if fmt.Sprintf("%.*g", p, a) != fmt.Sprintf("%.*g", p, b) {
				break
			}
		}
		return fmt.Sprintf("$%.*g", p, a), fmt.Sprintf("$%.*g", p, b)
	}
	d := max(decimals(a), decimals(b))
	for ; d < 12 && a != b; d++ {
		if fmt.Sprintf("%.*f", d, a) != fmt.Sprintf("%.*f", d, b) {
			break
		}
	}
	return fmt.Sprintf("$%.*f", d, a), fmt.Sprintf("$%.*f", d, b)
}

// decimals are the decimals USD writes v with.
func decimals(v float64) int {
	v = math.Abs(v)
	if v >= 0.01 || v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 4
	}
	return min(max(4, 1-int(math.Floor(math.Log10(v)))), 12)
}
