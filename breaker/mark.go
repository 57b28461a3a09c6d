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
	return fmt.Sprintf("$%.*f", decimals(v), v)
}

// USDPair writes two amounts (a cost and the limit it is held to) as USD
// does, with as many more decimals as they need to read differently when
// they differ.
func USDPair(a, b float64) (string, string) {
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
