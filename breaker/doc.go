// Package breaker is pure policy for stopping runaway agents: cost caps, spend
// velocity, repeated tool calls and loops. It does no I/O and starts no
// goroutines.
package breaker
