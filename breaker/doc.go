// Package breaker is pure policy for stopping runaway agents: cost caps,
// spend velocity, repeated tool calls and loops. It does no I/O and starts
// no goroutines: the recorder feeds it each model call before it goes out
// (Before) and each answer (After), and stops the run when either returns
// a Trip.
//
// Cost is priced through prices.Cost, the function every view of a run
// uses (the caller passes it in). The cap holds before the fact: a call
// is refused when the cost so far, what the calls in flight may cost and
// the most that call can cost (its request's size at four bytes a token,
// and the output limit it asks for, else the longest answer of the run)
// would pass it, not one call too late.
// Velocities are tokens and dollars over the last minute.
//
// Loops: a tool action is a tool call with its canonical arguments (JSON
// keys sorted) and the result the next request carries for it; the same
// action seen MaxRepeat times with no new action between trips
// (RuleRepeat), and so do the last 2×MaxRepeat actions alternating
// between two calls unless one got a new result each time
// (RuleOscillation): something new coming back is progress. Answers that say the same thing
// (semantic.go: word pairs shared, as Jaccard similarity, or code blocks
// equal once names and spacing are set aside) trip at MaxSemanticRepeat.
package breaker
