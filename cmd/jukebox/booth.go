package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
)

// BoothCmd works on booth transactions left open in a workspace (with
// `record --booth --keep` or `booth exec`).
type BoothCmd struct {
	Status   BoothStatusCmd   `cmd:"" default:"withargs" help:"List the open booth transactions and what each holds."`
	Diff     BoothDiffCmd     `cmd:"" help:"Print the change set of a booth transaction, every delete included."`
	Commit   BoothCommitCmd   `cmd:"" help:"Apply a booth transaction to the workspace, all or nothing."`
	Rollback BoothRollbackCmd `cmd:"" help:"Discard a booth transaction; the workspace stays as it is."`
	Recover  BoothRecoverCmd  `cmd:"" help:"Finish or undo commits a crash or a failed step interrupted (journals this jukebox wrote only)."`
	Discard  BoothDiscardCmd  `cmd:"" help:"Remove a transaction's state (one that is not trusted, or one left open) without touching the workspace."`
	Exec     BoothExecCmd     `cmd:"" help:"Run a WASI (preview 1) .wasm tool against the staged view."`
}

// Validate refuses every booth subcommand where the booth cannot run.
func (c *BoothCmd) Validate() error {
	return boothUnavailable("jukebox booth has nothing to work on here")
}

// boothTarget are the flags every booth subcommand shares.
type boothTarget struct {
	Workspace string `short:"C" default:"." type:"path" help:"Workspace directory."`
	Tx        string `help:"Transaction id (default: the only open one)."`
	PgDSN     string `name:"pg-dsn" env:"JUKEBOX_BOOTH_PG_DSN" help:"PostgreSQL DSN used to finish a prepared transaction after a crash."`
	JSON      bool   `help:"Print JSON."`
}

// recover finishes or undoes an interrupted commit before anything else.
// Only the commands that change the workspace or its transactions call
// it; status and diff only read.
func (b *boothTarget) recover(ctx context.Context, env *Env) (sandbox.RecoverReport, error) {
	rep, err := sandbox.Recover(ctx, b.Workspace, sandbox.Options{}, b.resolvers()...)
	for _, id := range rep.Committed {
		fmt.Fprintf(env.Stderr, "jukebox: booth: finished the interrupted commit of %s\n", id)
	}
	for _, id := range rep.RolledBack {
		fmt.Fprintf(env.Stderr, "jukebox: booth: undid the interrupted commit of %s\n", id)
	}
	for _, id := range rep.Restored {
		fmt.Fprintf(env.Stderr, "jukebox: booth: the commit of %s could not finish: undone, the workspace restored, the transaction open again\n", id)
	}
	for _, u := range rep.Untrusted {
		fmt.Fprintf(env.Stderr, "jukebox: booth: %s\n", untrustedText(u.ID, u.Reason))
	}
	for _, id := range rep.Running {
		fmt.Fprintf(env.Stderr, "jukebox: booth: %s is being committed by a running jukebox: left to it\n", id)
	}
	if errors.Is(err, sandbox.ErrNoResolver) && b.PgDSN == "" {
		err = fmt.Errorf("%w: its PostgreSQL work is prepared on the server and holds its locks until it is finished; "+
			"give the server with --pg-dsn DSN (the one --pg named) to finish or undo it", err)
	}
	return rep, err
}

// resolvers finish participants' prepared work: with --pg-dsn, the
// PostgreSQL ones.
func (b *boothTarget) resolvers() []sandbox.Resolver {
	if b.PgDSN == "" {
		return nil
	}
	return []sandbox.Resolver{pgtx.Resolver{DSN: b.PgDSN}, pgbooth.Resolver{DSN: b.PgDSN}}
}

// untrustedText says why a transaction (its journal, or its tx.json) is
// not applied and how to remove it.
func untrustedText(id, reason string) string {
	return fmt.Sprintf("%s: %s: not applied; jukebox booth discard %s removes it", id, reason, id)
}

// open recovers, then opens the chosen (or only) transaction.
func (b *boothTarget) open(ctx context.Context, env *Env) (*sandbox.Tx, error) {
	if _, err := b.recover(ctx, env); err != nil {
		return nil, err
	}
	return b.find()
}

// find opens the chosen (or only) transaction without recovering
// anything. A transaction this jukebox did not make here (untrusted) is
// never the default and never opened.
func (b *boothTarget) find() (*sandbox.Tx, error) {
	id := b.Tx
	if id == "" {
		infos, err := sandbox.List(b.Workspace, sandbox.Options{})
		if err != nil {
			return nil, err
		}
		trusted := slices.DeleteFunc(slices.Clone(infos), func(i sandbox.TxInfo) bool { return i.Untrusted != "" })
		untrusted := ""
		if n := len(infos) - len(trusted); n > 0 {
			untrusted = fmt.Sprintf(" (%d untrusted, never chosen: jukebox booth status lists them)", n)
		}
		switch len(trusted) {
		case 0:
			return nil, fmt.Errorf("%w in %s%s", sandbox.ErrNoTx, b.Workspace, untrusted)
		case 1:
			id = trusted[0].ID
		default:
			return nil, fmt.Errorf("%d open booth transactions in %s: choose one with --tx%s", len(trusted), b.Workspace, untrusted)
		}
	}
	tx, err := sandbox.Open(b.Workspace, id, sandbox.Options{Resolvers: b.resolvers()})
	if errors.Is(err, sandbox.ErrUntrusted) {
		return nil, fmt.Errorf("%w: never opened or committed; jukebox booth discard %s removes it", err, id)
	}
	if errors.Is(err, sandbox.ErrInUse) {
		return nil, fmt.Errorf("%w: the run that uses it commits or rolls it back when it ends (stop it with Ctrl-C to have it decide now)", err)
	}
	return tx, err
}

// BoothStatusCmd lists open transactions.
type BoothStatusCmd struct {
	boothTarget
}

// boothStatus is one row of `booth status`.
type boothStatus struct {
	sandbox.TxInfo
	Changes *map[sandbox.Op]int `json:"changes,omitempty"` // none while its run uses it; {} for nothing staged
	// Lost are the kinds of participant work that ended with the run
	// (sandbox.Tx.Lost): the transaction cannot commit.
	Lost []string `json:"lost,omitempty"`
}

// Run prints each open transaction with its counts of changes, and each
// one a commit left behind with what its journal says. It only reads:
// nothing is recovered or applied (jukebox booth recover does that).
func (c *BoothStatusCmd) Run(ctx context.Context, env *Env) error {
	infos, err := sandbox.List(c.Workspace, sandbox.Options{})
	if err != nil {
		return err
	}
	rows := make([]boothStatus, 0, len(infos))
	for _, info := range infos {
		row := boothStatus{TxInfo: info}
		if info.Running {
			rows = append(rows, row)
			continue // Open refuses it; its run decides it
		}
		if tx, err := sandbox.Open(c.Workspace, info.ID, sandbox.Options{}); err == nil {
			if cs, err := tx.Diff(); err == nil {
				counts := cs.Counts()
				if counts == nil {
					counts = map[sandbox.Op]int{}
				}
				row.Changes = &counts
			}
			for _, l := range tx.Lost() {
				row.Lost = append(row.Lost, l.Kind)
			}
			tx.Release()
		}
		rows = append(rows, row)
	}
	if c.JSON {
		return boothJSON(env.Stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(env.Stdout, "no open booth transactions")
	}
	for _, r := range rows {
		var counts map[sandbox.Op]int
		if r.Changes != nil {
			counts = *r.Changes
		}
		what := countText(counts)
		if len(r.Lost) > 0 {
			what += fmt.Sprintf("; its %s work was lost before the decision: commit refused, roll it back", strings.Join(r.Lost, ", "))
		}
		switch {
		case r.Untrusted != "":
			what = untrustedText(r.ID, r.Untrusted)
		case r.Running:
			what = "running: in use by a running jukebox, which decides it (its run has not ended)"
		case r.Committing:
			what = fmt.Sprintf("interrupted commit (journal %q): jukebox booth recover finishes or undoes it", r.Journal)
		}
		fmt.Fprintf(env.Stdout, "%s  %s  %s\n", r.ID, r.Created.Format("2006-01-02 15:04:05"), what)
	}
	return nil
}

// countText is "2 write, 1 delete", or "nothing staged".
func countText(counts map[sandbox.Op]int) string {
	if len(counts) == 0 {
		return "nothing staged"
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[op], op))
	}
	return strings.Join(parts, ", ")
}

// BoothDiffCmd prints a change set.
type BoothDiffCmd struct {
	boothTarget
}

// Run prints every change, one per line, never truncated. It only reads:
// nothing is recovered or applied.
func (c *BoothDiffCmd) Run(ctx context.Context, env *Env) error {
	tx, err := c.find()
	if err != nil {
		return err
	}
	defer tx.Release() // kept open: for the next command, in this process or another
	cs, err := tx.Diff()
	if err != nil {
		return err
	}
	lost := tx.Lost()
	if c.JSON && len(lost) > 0 {
		return boothJSON(env.Stdout, lostDiff(cs, lost))
	}
	if err := printChangeSet(env.Stdout, cs, c.JSON); err != nil || c.JSON {
		return err
	}
	writeLost(env.Stdout, lost)
	return printRoots(env.Stdout, tx)
}

// printRoots prints the change sets of the folders outside the workspace
// staged with it (--allow-write), each under its quoted path.
func printRoots(w io.Writer, tx *sandbox.Tx) error {
	for _, r := range tx.Roots() {
		cs, err := r.Diff()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "and staged in %s (--allow-write): %s\n%s", termtext.Quote(r.Root()), cs.Summary(), cs.String()); err != nil {
			return err
		}
	}
	return nil
}

// printChangeSet prints a heading that counts each operation, then every
// change, its paths quoted and sensitive ones marked (ChangeSet.String).
func printChangeSet(w io.Writer, cs sandbox.ChangeSet, asJSON bool) error {
	if asJSON {
		return boothJSON(w, cs)
	}
	_, err := fmt.Fprintf(w, "%s: %s\n%s", termtext.Quote(cs.TxID), cs.Summary(), cs.String())
	return err
}

// BoothCommitCmd commits a transaction.
type BoothCommitCmd struct {
	boothTarget
	DropOutbox bool `name:"drop-outbox" help:"Drop the MCP tool calls the booth held for this commit without asking (they run only with a yes on the terminal)."`
}

// Run commits and prints what was applied; conflicts are listed.
func (c *BoothCommitCmd) Run(ctx context.Context, env *Env) error {
	tx, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	defer tx.Release() // kept open: for the next command, in this process or another
	var roots strings.Builder
	if !c.JSON {
		if err := printRoots(&roots, tx); err != nil {
			return err
		}
	}
	held, run, err := c.heldCalls(tx, env)
	if err != nil {
		return err
	}
	cs, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	if !c.JSON {
		fmt.Fprintf(env.Stdout, "committed %s: %s\n", cs.TxID, termtext.Count(len(cs.Changes), "change", "changes"))
	}
	if err := printChangeSet(env.Stdout, cs, c.JSON); err != nil {
		return err
	}
	if _, err = io.WriteString(env.Stdout, roots.String()); err != nil {
		return err
	}
	results := make([]engine.OutboxResult, len(held))
	for i, h := range held {
		results[i] = h.Result()
	}
	if run {
		// After the commit, outside the booth, in the workspace, with this
		// command's environment: the run's tape is closed, so the calls
		// are not recorded, only said.
		results = engine.RunHeld(ctx, held, os.Environ(), tx.Workspace(), nil)
	}
	printOutbox(env.Stderr, results, cs.TxID)
	return nil
}

// heldCalls are the MCP calls the booth held for this commit (kept with
// the transaction when its run ended), and whether to run them: only on a
// person's yes on the terminal, having seen each and what runs it.
func (c *BoothCommitCmd) heldCalls(tx *sandbox.Tx, env *Env) ([]engine.HeldCall, bool, error) {
	raw := tx.Deferred()
	if len(raw) == 0 {
		return nil, false, nil
	}
	var held []engine.HeldCall
	if err := json.Unmarshal(raw, &held); err != nil {
		return nil, false, fmt.Errorf("booth %s: the held MCP calls do not read: %w", tx.ID(), err)
	}
	if len(held) == 0 || c.DropOutbox {
		return held, false, nil
	}
	if !haveTerminal() {
		fmt.Fprintf(env.Stderr, "jukebox: booth %s holds %d MCP tool calls for its commit; with no terminal to ask on, they are dropped\n", tx.ID(), len(held))
		return held, false, nil
	}
	results := make([]engine.OutboxResult, len(held))
	for i, h := range held {
		results[i] = h.Result()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe booth held %d MCP tool calls for this commit, which run OUTSIDE the booth, after it, when you say yes:\n", len(held))
	writeHeld(&b, results)
	code := newCode()
	fmt.Fprintf(&b, "Run them after the commit? To say yes, type the code %s: ", code)
	yes, err := askOnTerminal(b.String(), code, env.Signals)
	return held, yes, err
}

// BoothRollbackCmd discards a transaction.
type BoothRollbackCmd struct {
	boothTarget
}

// Run rolls back.
func (c *BoothRollbackCmd) Run(ctx context.Context, env *Env) error {
	tx, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	defer tx.Release() // kept open: for the next command, in this process or another
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	if c.JSON {
		return boothJSON(env.Stdout, map[string]string{"rolled_back": tx.ID()})
	}
	_, err = fmt.Fprintf(env.Stdout, "rolled back %s\n", tx.ID())
	return err
}

// BoothRecoverCmd finishes or undoes interrupted commits.
type BoothRecoverCmd struct {
	boothTarget
}

// Run recovers and says what it did; journals it does not trust are
// listed, not applied.
func (c *BoothRecoverCmd) Run(ctx context.Context, env *Env) error {
	rep, err := c.recover(ctx, env)
	if c.JSON {
		if jerr := boothJSON(env.Stdout, rep); err == nil {
			err = jerr
		}
		return err
	}
	if err == nil && len(rep.Committed)+len(rep.RolledBack)+len(rep.Restored)+len(rep.Untrusted)+len(rep.Running) == 0 {
		fmt.Fprintln(env.Stdout, "nothing to recover")
	}
	return err
}

// BoothDiscardCmd removes transactions' state without touching the workspace.
type BoothDiscardCmd struct {
	Workspace string `short:"C" default:"." type:"path" help:"Workspace directory."`
	ID        string `arg:"" optional:"" help:"The transaction to remove."`
	All       bool   `help:"Remove every transaction whose journal or tx.json is not trusted (earlier release, planted, tampered, or another workspace's)."`
	JSON      bool   `help:"Print JSON."`
}

// Validate wants an id or --all, not both.
func (c *BoothDiscardCmd) Validate() error {
	if (c.ID == "") == !c.All {
		return fmt.Errorf("booth discard: give a transaction id or --all")
	}
	return nil
}

// Run removes the transaction (or every untrusted one) and names it.
func (c *BoothDiscardCmd) Run(env *Env) error {
	ids := []string{c.ID}
	if c.All {
		infos, err := sandbox.List(c.Workspace, sandbox.Options{})
		if err != nil {
			return err
		}
		ids = nil
		for _, info := range infos {
			if info.Untrusted != "" {
				ids = append(ids, info.ID)
			}
		}
	}
	done := []string{}
	for _, id := range ids {
		if err := sandbox.Discard(c.Workspace, id, sandbox.Options{}); err != nil {
			return err
		}
		done = append(done, id)
		if !c.JSON {
			fmt.Fprintf(env.Stdout, "discarded %s (the workspace was not touched)\n", id)
		}
	}
	if c.JSON {
		return boothJSON(env.Stdout, map[string][]string{"discarded": done})
	}
	if len(done) == 0 {
		fmt.Fprintln(env.Stdout, "no untrusted transactions to discard")
	}
	return nil
}

// BoothExecCmd runs a .wasm tool in the booth.
type BoothExecCmd struct {
	boothTarget
	New  bool     `help:"Begin a new transaction instead of using the open one."`
	Tool string   `arg:"" type:"existingfile" help:"WASI preview 1 module (.wasm)."`
	Args []string `arg:"" optional:"" passthrough:"" help:"Arguments for the tool."`
}

// Run runs the tool with the workspace's staged view mounted at "/"; the
// transaction stays open for diff, commit or rollback.
func (c *BoothExecCmd) Run(ctx context.Context, env *Env) error {
	wasm, err := os.ReadFile(c.Tool)
	if err != nil {
		return err
	}
	tx, err := c.open(ctx, env)
	if c.New || errors.Is(err, sandbox.ErrNoTx) {
		tx, err = sandbox.Begin(c.Workspace, sandbox.Options{})
	}
	if err != nil {
		return err
	}
	defer tx.Release() // it stays open for diff, commit or rollback
	fmt.Fprintf(env.Stderr, "jukebox: booth: %s (wasm, in process)\n", tx.ID())
	code, err := sandbox.RunWasm(ctx, tx.Files(), wasm, sandbox.WasmOptions{
		Args: append([]string{c.Tool}, c.Args...), Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return boothJSON(env.Stdout, map[string]any{"tx": tx.ID(), "exit_code": code})
	}
	if code != 0 {
		return fmt.Errorf("%s exited with status %d (transaction %s stays open)", c.Tool, code, tx.ID())
	}
	return nil
}

// boothJSON prints v as indented JSON.
func boothJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
