package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
)

// notifySignals catches, once for the whole process, the signals that ask
// jukebox to stop (stopSignals). The context is cancelled by the first of
// them; every one of them also arrives on sigs, which a command that runs
// an agent hands to the engine (RunOptions.Signals) to forward to the
// agent. stop lets the signals act as they would without jukebox again.
func notifySignals(parent context.Context) (ctx context.Context, sigs <-chan os.Signal, stop func()) {
	ctx, stopCtx := signal.NotifyContext(parent, stopSignals...)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, stopSignals...)
	return ctx, ch, func() { signal.Stop(ch); stopCtx() }
}

// agentContext is the context for a run that hands its agent jukebox's
// signals (Env.Signals): they are the agent's to act on, and the run ends
// when the agent exits, so they do not cancel the run (a cancelled run
// would have its agent stopped). ctx's values pass on. Such a run also
// outlives a reader of jukebox's output that leaves (catchBrokenPipe).
func agentContext(ctx context.Context) context.Context {
	catchBrokenPipe()
	return context.WithoutCancel(ctx)
}

var brokenPipe sync.Once

// catchBrokenPipe makes a write to stdout or stderr piped into a reader
// that has stopped (jukebox record ... | head) fail with EPIPE, from now
// on, instead of killing jukebox with SIGPIPE: a command that runs agents
// or writes tapes ends its runs and closes its tapes all the same (the
// engine closes the agent's end of that stream, so that the agent's next
// write fails as it would have without jukebox). Caught, not ignored: an
// ignored signal stays ignored in the agent, a caught one does not. The
// other commands end at a broken pipe, as other tools do.
func catchBrokenPipe() {
	brokenPipe.Do(func() {
		if len(brokenPipeSignals) > 0 { // none would be every signal
			signal.Notify(make(chan os.Signal, 1), brokenPipeSignals...)
		}
	})
}
