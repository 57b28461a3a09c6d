// Package engine records, replays and forks agent runs: the LLM proxy, the
// process runner, the matcher and the timeline model the turntable reads.
//
// engine imports tapefmt, sandbox and prices; it never imports the UI or CLI
// libraries. llmwire.ResponseUsage is the one way every view (ls, the turntable,
// diff, the fork counter) finds an LLM call's tokens, model and cost.
package engine
