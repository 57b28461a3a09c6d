// Package redact keeps secrets off jukebox's tapes.
//
// Two kinds of rule apply, both at one place: the tape writer's filter
// (Filter, passed as tapefmt.Options.Filter), which sees every payload
// before it is encoded and every blob before it is stored.
//
// The credential rules always apply: headers, query parameters and
// environment variables whose names look like credentials are dropped
// (Header, Query, Env, URL), and credentials inside the command line and
// the environment values kept are replaced by Redacted (Argv, Text).
//
// The user's patterns (jukebox --redact, a Masker) mask what they match in
// everything else the tape keeps: request and response bodies, the
// agent's output, tool calls and results, MCP messages, files, SQL. The
// patterns are written into run.start, never what they matched, so that
// replay and fork mask a live request alike before comparing it with the
// tape.
//
// tapefmt describes the bytes on a tape; this package decides which bytes
// those are.
package redact
