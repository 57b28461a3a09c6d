// Package breaker is pure policy for stopping runaway agents: cost caps, spend
// velocity, repeated tool calls and loops. It does no I/O and starts no
// goroutines.
//
// Only this doc exists so far: the policy is to come, and with it the
// breaker.trip frames that tapefmt and the turntable already know. What a
// call costs is not decided here: the breaker will price calls through
// prices.Cost, the function every view of a run uses.
package breaker
