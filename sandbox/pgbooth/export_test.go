package pgbooth

import "time"

// SetSettleTimeout shortens the wait for a running query at the decision.
func SetSettleTimeout(d time.Duration) (restore func()) {
	old := settleTimeout
	settleTimeout = d
	return func() { settleTimeout = old }
}
