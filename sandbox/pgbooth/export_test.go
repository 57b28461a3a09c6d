package pgbooth

import "time"

// SetSettleTimeout shortens the wait for a running query at the decision.
func SetSettleTimeout(d time.Duration) (restore func()) {
	old := settleTimeout
	settleTimeout = d
	return func() { settleTimeout = old }
}

// SetSettleFirstRun rewrites the first run of the rollback a session
// makes when its client leaves in the middle of an exchange.
func SetSettleFirstRun(f func(sql string) string) (restore func()) {
	old := firstRun
	firstRun = f
	return func() { firstRun = old }
}
