package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
)

// networkNotes warns about the agent's own network: a run in which it
// made no model call through jukebox (an SDK that ignores the base URL
// jukebox gives it reaches the provider directly, unrecorded, or in
// replay, live and unnoticed), and connections the booth refused under
// --net none (jukebox served none of them). A replay (replayed) says
// nothing of model calls when the tape holds none it left unasked: the
// recording made none either, and said so.
func networkNotes(w io.Writer, res *engine.Result, replayed bool) {
	if res == nil {
		return
	}
	switch {
	case replayed && res.Calls == 0 && res.Unused == 0:
	case res.Calls == 0 && res.HTTPRequests > 0:
		fmt.Fprintf(w, "jukebox: note: the agent made no model call jukebox recognises; its %d other HTTP requests are "+
			"on the tape as http frames (`jukebox show --kind http.request`), a provider jukebox does not know among them if it called one.\n", res.HTTPRequests)
	case res.Calls == 0 && res.MCPMessages > 0:
		fmt.Fprintf(w, "jukebox: note: the run's %d MCP messages went through jukebox mcp (on the tape as mcp.message frames); "+
			"it made no model call through jukebox.\n", res.MCPMessages)
	case res.Calls == 0 && res.ControlExchanges > 0:
		fmt.Fprintf(w, "jukebox: note: the run's %d control-API exchanges (turns, transactions) went through jukebox; "+
			"it made no model call through jukebox (a model client made outside a track, or one that ignores "+
			"OPENAI_BASE_URL / ANTHROPIC_BASE_URL and HTTPS_PROXY, is not recorded).\n", res.ControlExchanges)
	case res.Calls == 0 && (!replayed || res.ExitSame != nil && *res.ExitSame):
		// A replayed agent that ended otherwise than recorded, none of the
		// calls asked for, failed before them (the notes on its folder and
		// environment say why): its client did not go past jukebox.
		fmt.Fprintln(w, "jukebox: note: the agent made no model call through jukebox. If it does call a model, its client "+
			"ignores both the base URL variables (OPENAI_BASE_URL / ANTHROPIC_BASE_URL) and the proxy variables "+
			"(HTTPS_PROXY): those calls are not on the tape and would not replay offline (under `--booth --net none` they are refused, "+
			"and listed as net.refused frames).")
	}
	if res.TLSFailed > 0 {
		fmt.Fprintf(w, "jukebox: note: %d TLS connections of the agent refused the run's certificate, the first: %s. "+
			"A client that pins certificates or keeps its own trust store (a JVM) cannot go through jukebox; "+
			"its requests were not made (docs/recording.md: Everything the agent sends).\n", res.TLSFailed, res.TLSError)
	}
	if len(res.Unpriced) > 0 {
		fmt.Fprintf(w, "jukebox: note: no price for %s: those calls' cost is unknown (+? in ls and cost); "+
			"give prices with --prices FILE (LiteLLM's format)\n", strings.Join(res.Unpriced, ", "))
	}
	if res.LiveFailed > 0 {
		what := fmt.Sprintf("%d live calls", res.LiveFailed)
		if res.LiveFailed == 1 {
			what = "1 live call"
		}
		fmt.Fprintf(w, "jukebox: note: %s never reached an upstream, the first with: %s\n"+
			"jukebox: is that upstream up? --upstream NAME=URL names another (for a tape the demo recorded: run `jukebox demo-model` "+
			"and pass --upstream openai=http://127.0.0.1:8931/v1).\n", what, res.LiveError)
	}
	if res.TooLarge > 0 {
		fmt.Fprintf(w, "jukebox: note: %d requests of the agent were refused (413) for a body over the %d MiB jukebox holds of a request, "+
			"the first %s: they were not sent and are not on the tape (docs/recording.md: Limits).\n", res.TooLarge, engine.MaxRequestBody>>20, termtext.Sanitize(res.TooLargeTo))
	}
	if res.NetRefused > 0 {
		which := "net.refused frames"
		if res.NetRefused > engine.MaxNetRefusedFrames {
			which = fmt.Sprintf("the first %d as net.refused frames", engine.MaxNetRefusedFrames)
		}
		fmt.Fprintf(w, "jukebox: note: the agent tried %d connections jukebox does not serve; the booth refused them "+
			"(%s on the tape: `jukebox show TAPE --kind net.refused`)%s.\n", res.NetRefused, which, refusedTo(res.RefusedTo, false))
	}
	if res.HermeticRefused > 0 {
		fmt.Fprintf(w, "jukebox: note: the booth refused %d plain TCP connections of the agent (--hermetic refused them; "+
			"replay and fork carry none live) (net.conn frames with refused set)%s.\n", res.HermeticRefused, refusedTo(res.RefusedTo, true))
	}
}

// refusedTo lists the destinations of refused connections, those
// --hermetic refused or the others, quoted (the agent chose the names).
func refusedTo(to []string, hermetic bool) string {
	var out []string
	for _, d := range to {
		if strings.HasSuffix(d, " (--hermetic)") == hermetic {
			out = append(out, termtext.Sanitize(strings.TrimSuffix(d, " (--hermetic)")))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, ", ")
}
