// Package engine records, replays and forks agent runs: the LLM proxy, the
// process runner, the matcher and the timeline model the turntable reads.
//
// engine imports tapefmt, sandbox and breaker; it never imports the UI or CLI
// libraries.
package engine
