package breaker

import "fmt"

// spentText is the cost so far, "~$0.0012 (some answers ...)" when some of
// it was counted rather than reported.
func (b *Breaker) spentText() string {
	if b.estimated {
		return fmt.Sprintf("~$%.4f (some answers reported no usage: their tokens were counted)", b.cost)
	}
	return fmt.Sprintf("$%.4f", b.cost)
}

// mark is "~" once some usage was counted rather than reported.
func (b *Breaker) mark() string {
	if b.estimated {
		return "~"
	}
	return ""
}
