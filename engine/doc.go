// Package engine is the runner: it records, replays and forks agent runs.
// It holds the recording LLM proxy and the process runner (which forwards
// signals to the agent), the replayer and its matcher, fork, override and
// pack, the control API agents call, and the glue to the Shadow Booth.
//
// Imports point one way: cmd and tui call engine to run agents, and engine
// imports tapefmt, sandbox, llmwire (model, usage and cost, as
// llmwire.ResponseUsage finds them, which Event reports live) and diffview
// (TextDiff, for divergence reports). It never imports timeline, the read
// side through which cmd and tui show tapes, nor the UI or CLI libraries.
package engine
