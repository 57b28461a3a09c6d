package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// boothFlags run an agent inside the Shadow Booth (record, replay; fork builds one).
type boothFlags struct {
	Booth     bool                `help:"Run the agent inside the Shadow Booth: its writes to the working directory are staged and committed or rolled back at the end."`
	Commit    engine.CommitPolicy `enum:"ask,on-success,always,never" default:"ask" help:"With --booth: ask (show the changes and ask), on-success (commit when the agent exits 0), always, or never."`
	Keep      bool                `help:"With --booth: leave the transaction open instead of rolling it back, for jukebox booth diff|commit|rollback."`
	Snapshot  bool                `help:"With --booth: keep the workspace as the run found it on the tape (its files as blobs, stored once), so the tape alone rebuilds it at any frame (jukebox checkout, the turntable's files)."`
	BoothMode string              `enum:"auto,overlay,reflink,copy" default:"auto" help:"With --booth: staging mode; auto (or overlay) runs the agent confined in the namespace overlay, or refuses to start it (exit 2) where that cannot be made; copy (or reflink) runs it unconfined in a copy of the workspace, which stages its changes there but keeps it from nothing else."`
	Net       string              `enum:"host,none" default:"host" help:"With --booth: the agent's network: host (what you reach) or none (its own network namespace, where only jukebox's endpoints for the run, the recorder and the control API, are reachable). none needs the overlay booth."`
	// Hermetic refuses the agent's plain TCP under --net none.
	Hermetic bool `help:"With --booth --net none: nothing leaves but through jukebox: every HTTP(S) call goes through its proxy, and plain TCP to other ports (a database, SMTP, a raw socket), which jukebox otherwise carries to the real host and records as net.conn frames, is refused (the agent gets ECONNREFUSED; the tape names each one). Replay and fork never carry plain TCP live, with or without it."`
	// AllowWriteLive are folders outside the workspace the agent may
	// write directly: unstaged, never rolled back.
	AllowWriteLive []string `name:"allow-write-live" placeholder:"DIR" help:"With --booth: a folder outside the workspace the agent may write directly, unstaged and never rolled back (a cache such as ~/.cache/pip; not one holding jukebox's own ~/.cache/jukebox). Repeatable. Everything else outside the workspace is read-only in the booth."`
	// AllowWrite are folders outside the workspace staged with it.
	AllowWrite []string `name:"allow-write" placeholder:"DIR" help:"With --booth: a folder outside the workspace the agent may write, staged as the workspace is: its changes are listed with the workspace's and committed or rolled back with them, as one. Repeatable. Needs the overlay booth."`
	// StopGrace is how long the agent has to exit after the first Ctrl-C.
	StopGrace time.Duration `name:"stop-grace" default:"10s" placeholder:"DURATION" help:"After the first Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT), passed on to the agent, how long it has to exit before it is killed (outside the booth: its whole process tree); a second one kills it at once."`
	PG        string        `name:"pg" placeholder:"DSN" help:"With --booth: the agent's PostgreSQL work joins the booth. The agent gets a local endpoint (DATABASE_URL, PGHOST, PGPORT, PGUSER, PGDATABASE, and a password for the run in PGPASSWORD) whose sessions run inside transactions that are prepared, then committed or rolled back together with the files. The server at DSN must be reachable and allow prepared transactions (max_prepared_transactions above 0), else exit 2 before the agent starts. Its password may come from PGPASSWORD or ~/.pgpass rather than the DSN."`
}

func (b *boothFlags) validate() error {
	if err := b.validatePG(); err != nil {
		return err
	}
	if !b.Booth && (b.Commit != engine.CommitAsk || b.Keep || b.Snapshot || b.BoothMode != "auto" || (b.Net != "host" && b.Net != "") || len(b.AllowWriteLive) > 0 || len(b.AllowWrite) > 0 || b.Hermetic) {
		return fmt.Errorf("--commit, --keep, --snapshot, --booth-mode, --net, --hermetic, --allow-write and --allow-write-live only apply with --booth")
	}
	if !b.Booth {
		return nil
	}
	if err := boothUnavailable("run without --booth"); err != nil {
		return err
	}
	if err := boothKeyPlace("run without --booth"); err != nil {
		return err
	}
	if b.Hermetic && b.Net != "none" {
		return fmt.Errorf("--hermetic needs --net none: only in its own network namespace can jukebox refuse what does not go through it")
	}
	if b.Net == "none" && (b.BoothMode == "copy" || b.BoothMode == "reflink") {
		return fmt.Errorf("--net none needs the overlay booth; --booth-mode %s cannot confine the agent", b.BoothMode)
	}
	if len(b.AllowWrite) > 0 && (b.BoothMode == "copy" || b.BoothMode == "reflink") {
		return fmt.Errorf("--allow-write needs the overlay booth; --booth-mode %s stages the workspace alone (--allow-write-live writes a folder unstaged)", b.BoothMode)
	}
	ws, err := os.Getwd()
	if err != nil {
		return err
	}
	type named struct{ flag, path string }
	var all []named
	for _, f := range []struct {
		name  string
		paths []string
	}{{"allow-write-live", b.AllowWriteLive}, {"allow-write", b.AllowWrite}} {
		for i, p := range f.paths {
			if f.paths[i], err = writableDir("--"+f.name, p, ws); err != nil {
				return err
			}
			for _, o := range all {
				if sandbox.Within(f.paths[i], o.path) || sandbox.Within(o.path, f.paths[i]) {
					return fmt.Errorf("--%s %s: overlaps %s %s; name each folder once", f.name, p, o.flag, o.path)
				}
			}
			all = append(all, named{"--" + f.name, f.paths[i]})
		}
	}
	return nil
}

// writableDir checks a --allow-write or --allow-write-live folder (flag)
// and returns its absolute path: it must exist, be a real folder (not a
// symlink, which the booth would have to follow), and be neither / nor
// the workspace, inside it or holding it (the workspace is staged; a
// folder holding it would make its surroundings writable, which is better
// named one by one), nor a place the booth gives the agent its own of or
// hides (sandbox.CheckWriteLive: /tmp, /run, /proc, the journal key's
// folder, ...).
func writableDir(flag, p, ws string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, p, err)
	}
	fi, err := os.Lstat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %s: %w", flag, p, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return "", fmt.Errorf("%s %s: a symlink; name the folder it points to", flag, p)
	case !fi.IsDir():
		return "", fmt.Errorf("%s %s: not a folder", flag, p)
	case abs == "/":
		return "", fmt.Errorf("%s /: that would let the agent write anywhere", flag)
	}
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		return "", fmt.Errorf("%s %s: reached through a symlink (%s); name the folder itself", flag, p, real)
	}
	if sandbox.Within(abs, ws) {
		return "", fmt.Errorf("%s %s: inside the workspace, which the booth stages already", flag, p)
	}
	if sandbox.Within(ws, abs) {
		return "", fmt.Errorf("%s %s: holds the workspace; name the folders beside it the agent may write", flag, p)
	}
	if err := sandbox.CheckWriteLive(ws, abs, sandbox.Options{}); err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, p, err)
	}
	return abs, nil
}

// boothKeyPlace says, before anything starts, that the booth has no
// place for its journal key (no home folder, no XDG_STATE_HOME), then
// what to do instead (hint): a fork with HOME unset failed once its tape
// was begun ("sandbox: booth key: no home directory"), exit 1, a tape of
// two frames left behind.
func boothKeyPlace(hint string) error {
	if _, err := sandbox.KeyFile(sandbox.Options{}); err != nil {
		return fmt.Errorf("the Shadow Booth keeps its key in $XDG_STATE_HOME/jukebox, else ~/.local/state/jukebox, and neither "+
			"HOME nor XDG_STATE_HOME is set: set one, or %s", hint)
	}
	return nil
}

// boothSupported is sandbox.Supported, replaced in tests to play a
// platform without the booth.
var boothSupported = sandbox.Supported

// boothUnavailable is nil where the Shadow Booth runs (Linux). Elsewhere
// it says why not, then what to do instead (hint), for example: "the
// Shadow Booth needs Linux (user and mount namespaces, overlayfs); this
// is darwin/arm64: run without --booth". Commands that use the booth call
// it from Validate, so the answer is exit 2 before anything starts.
func boothUnavailable(hint string) error {
	err := boothSupported()
	if err == nil {
		return nil
	}
	var ue *sandbox.UnsupportedError
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %s", ue.Reason(), hint)
	}
	return fmt.Errorf("%w: %s", err, hint)
}

// checkStreams refuses, under --booth, a folder as the agent's standard
// stream (exit 2), before anything starts: its descriptor would reach the
// host's tree past the booth's read-only mounts (sandbox.CheckStreams).
func (b *boothFlags) checkStreams(env *Env) error {
	if !b.Booth {
		return nil
	}
	return withCode(ExitUsage, sandbox.CheckStreams(env.Stdin, env.Stdout, env.Stderr))
}

// boothOptions are the engine's options, or nil without --booth, and a
// guard of the terminal the agent shares, whose restore the caller defers.
// With --commit ask and no terminal to ask on, the booth is kept open
// instead; with one, the terminal's settings are put back before the
// question, which asks for a code (newCode) when a yes would commit a
// sensitive path, SQL (--pg) or MCP calls that run outside the booth.
func (b *boothFlags) boothOptions(env *Env) (*engine.BoothOptions, *ttyGuard) {
	if !b.Booth {
		return nil, nil
	}
	tty := guardTerminal(env)
	o := &engine.BoothOptions{Commit: b.Commit, Keep: b.Keep, Mode: sandbox.Mode(b.BoothMode), Notice: env.Stderr,
		Net: sandbox.Net(b.Net), Hermetic: b.Hermetic, WriteLive: b.AllowWriteLive, Stage: b.AllowWrite, Grace: b.StopGrace, Snapshot: b.Snapshot}
	if b.Commit == engine.CommitAsk {
		if haveTerminal() { // it is opened again to ask
			o.Ask = func(cs sandbox.ChangeSet, roots []engine.RootChanges, held []engine.OutboxResult, sql []tapefmt.SQLSession) (bool, error) {
				tty.restore()
				code := ""
				if sensitiveIn(cs, roots) > 0 || len(held) > 0 || !pgbooth.Work(sql).Empty() {
					code = newCode()
				}
				return askOnTerminal(askText(cs, roots, held, sql, code), code, env.Signals)
			}
		} else {
			fmt.Fprintln(env.Stderr, "jukebox: no terminal to ask on: the booth will be kept open (jukebox booth commit|rollback)")
			o.Commit, o.Keep = engine.CommitNever, true
		}
	}
	return o, tty
}

// writeHeld lists held MCP calls for a person to decide on: server, tool
// and arguments, all quoted (the agent chose them), and what runs each.
func writeHeld(b *strings.Builder, held []engine.OutboxResult) {
	for _, h := range held {
		mark := ""
		if h.Approve {
			mark = " (the policy asks for your approval)"
		}
		how := "by running"
		if len(h.Argv) == 1 && (strings.HasPrefix(h.Argv[0], "http://") || strings.HasPrefix(h.Argv[0], "https://")) {
			how = "by calling the server at" // record --mcp-url, jukebox mcp --url
		}
		fmt.Fprintf(b, "  %s %s %s%s\n    %s: %s\n", termtext.Quote(h.Server), termtext.Quote(h.Tool),
			timeline.OneLine(termtext.Sanitize(string(h.Args)), 100), mark, how, quoteArgv(h.Argv))
	}
}

// askText is the question askOnTerminal asks. Every name in it was chosen
// by the agent, so each is quoted (termtext.Quote) and no control, bidi
// or invisible character reaches the terminal; sensitive paths are marked
// with "!" and a line saying why, and the heading counts each operation.
// The changes of staged folders outside the workspace (--allow-write)
// follow, each under its folder's quoted path, then the MCP calls held for
// the commit (jukebox mcp --policy), their arguments quoted, then the
// agent's SQL (--pg), destructive statements marked as sensitive paths are.
//
// With a code, only the code says yes: the agent, which ended before it
// was drawn, cannot answer for the user.
func askText(cs sandbox.ChangeSet, roots []engine.RootChanges, held []engine.OutboxResult, sql pgbooth.Work, code string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe agent staged %s: %s\n%s", cs.Count(), cs.Summary(), cs.String())
	for _, r := range roots {
		fmt.Fprintf(&b, "and in %s (--allow-write), %s: %s\n%s", termtext.Quote(r.Root), r.Changes.Count(), r.Changes.Summary(), r.Changes.String())
	}
	if len(held) > 0 {
		fmt.Fprintf(&b, "and %d MCP tool calls held until the commit, which run OUTSIDE the booth when you say yes:\n", len(held))
		writeHeld(&b, held)
	}
	k := writeSQL(&b, sql)
	if n := sensitiveIn(cs, roots); n > 0 {
		fmt.Fprintf(&b, "%d of them touch sensitive paths (marked !): read those before you answer.\n", n)
	}
	if k > 0 {
		fmt.Fprintf(&b, "%d of the SQL statements are destructive (marked !): read those before you answer.\n", k)
	}
	switch {
	case !sql.Empty() && len(roots) > 0:
		b.WriteString("Commit them all, to the workspace, those folders and the database?")
	case !sql.Empty():
		b.WriteString("Commit them to the workspace, and the SQL to the database?")
	case len(roots) > 0:
		b.WriteString("Commit them all, to the workspace and those folders?")
	default:
		b.WriteString("Commit them to the workspace?")
	}
	if code == "" {
		return b.String() + " [y/N] "
	}
	fmt.Fprintf(&b, " To say yes, type the code %s (n rolls back; anything else keeps them staged): ", code)
	return b.String()
}

// sensitiveIn counts the sensitive changes of the workspace and of the
// staged folders outside it.
func sensitiveIn(cs sandbox.ChangeSet, roots []engine.RootChanges) int {
	n := sensitiveCount(cs)
	for _, r := range roots {
		n += sensitiveCount(r.Changes)
	}
	return n
}

// quoteArgv is a command line for the question, each word quoted safely.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = termtext.Quote(a)
	}
	return strings.Join(q, " ")
}

func sensitiveCount(cs sandbox.ChangeSet) int {
	n := 0
	for _, c := range cs.Changes {
		if len(c.Sensitive()) > 0 {
			n++
		}
	}
	return n
}

// printOutbox says how each held MCP call went. The server's and tool's
// names (the agent chose them), the key and the transaction are quoted and
// the server's error made one safe line (termtext): none of them may move
// the cursor, recolour or hide what follows.
func printOutbox(w io.Writer, results []engine.OutboxResult, tx string) {
	q := termtext.Quote
	for _, o := range results {
		call := q(o.Server) + " " + q(o.Tool)
		switch {
		case o.Kept:
			fmt.Fprintf(w, "jukebox: outbox: %s kept with the transaction (key %s): jukebox booth commit --tx %s offers to run it\n", call, q(o.Key), q(tx))
		case o.Ran && o.Error == "":
			fmt.Fprintf(w, "jukebox: outbox: %s ran after the commit (key %s)\n", call, q(o.Key))
		case o.Ran || o.Error != "":
			fmt.Fprintf(w, "jukebox: outbox: %s FAILED after the commit (key %s): %s\n", call, q(o.Key), timeline.OneLine(o.Error, 500))
		default:
			fmt.Fprintf(w, "jukebox: outbox: %s dropped, never run (key %s)\n", call, q(o.Key))
		}
	}
}

// printBooth says what happened to the staged changes, listing every one.
func printBooth(env *Env, b *engine.BoothResult) {
	if b == nil {
		return
	}
	resetTerminal(env.Stderr)
	fmt.Fprintf(env.Stderr, "jukebox: booth %s (%s): %s: %s\n%s", b.Tx, b.Mode, b.Changes.Count(), b.Changes.Summary(), b.Changes.String())
	for _, r := range b.Roots {
		fmt.Fprintf(env.Stderr, "jukebox: and staged in %s (--allow-write): %s: %s\n%s", termtext.Quote(r.Root), r.Changes.Count(), r.Changes.Summary(), r.Changes.String())
	}
	writeSQL(env.Stderr, b.SQL)
	printOutbox(env.Stderr, b.Outbox, b.Tx)
	switch {
	case b.Refused:
		refused := termtext.Count(b.RefusedCount(), "entry the booth cannot commit was", "entries the booth cannot commit were")
		fmt.Fprintf(env.Stderr, "jukebox: booth kept open: %s refused (REFUSED above); "+
			"nothing was committed or rolled back.\n"+
			"jukebox: `jukebox booth commit --tx %[2]s` applies the rest without them; `jukebox booth rollback --tx %[2]s` discards it all\n",
			refused, b.Tx)
	case b.Kept && (b.Interrupted || b.Undecided != ""):
		why := b.Undecided
		if why == "" {
			why = "interrupted while the agent ran"
		}
		fmt.Fprintf(env.Stderr, "jukebox: booth kept open (%s): nothing applied, nothing discarded.\n"+
			"jukebox: `jukebox booth diff --tx %[2]s` shows it; `jukebox booth commit --tx %[2]s` applies it; `jukebox booth rollback --tx %[2]s` discards it\n",
			why, b.Tx)
	case b.Committed && len(b.Roots) > 0:
		roots := make([]string, len(b.Roots))
		for i, r := range b.Roots {
			roots[i] = termtext.Quote(r.Root)
		}
		fmt.Fprintf(env.Stderr, "jukebox: booth committed to the workspace and to %s\n", strings.Join(roots, ", "))
	case b.Committed:
		fmt.Fprintln(env.Stderr, "jukebox: booth committed to the workspace")
	case b.Kept:
		fmt.Fprintf(env.Stderr, "jukebox: booth kept open: jukebox booth diff|commit|rollback --tx %s\n", b.Tx)
	case b.Pending:
		fmt.Fprintln(env.Stderr, "jukebox: booth commit interrupted; the workspace may be partly changed: jukebox booth recover")
	default:
		fmt.Fprintln(env.Stderr, rolledBack(b.Confined))
	}
}

// rolledBack says what a rollback did, no more than the code knows: the
// staged changes were discarded. Only a confined agent could not have
// written the workspace some other way.
func rolledBack(confined bool) string {
	if confined {
		return "jukebox: booth rolled back: the staged changes were discarded; the agent, confined, wrote nothing else in the workspace"
	}
	return "jukebox: booth rolled back: the staged changes were discarded (the copy does not confine: anything the agent wrote by absolute path outside its copy stays)"
}
