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

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
)

// BoothCmd works on booth transactions left open in a workspace (with
// `record --booth --keep` or `booth exec`).
type BoothCmd struct {
	Status   BoothStatusCmd   `cmd:"" default:"withargs" help:"List the open booth transactions and what each holds."`
	Diff     BoothDiffCmd     `cmd:"" help:"Print the change set of a booth transaction, every delete included."`
	Commit   BoothCommitCmd   `cmd:"" help:"Apply a booth transaction to the workspace, all or nothing."`
	Rollback BoothRollbackCmd `cmd:"" help:"Discard a booth transaction; the workspace stays as it is."`
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
func (b *boothTarget) recover(ctx context.Context, env *Env) error {
	var res []sandbox.Resolver
	if b.PgDSN != "" {
		res = append(res, pgtx.Resolver{DSN: b.PgDSN})
	}
	rep, err := sandbox.Recover(ctx, b.Workspace, sandbox.Options{}, res...)
	for _, id := range rep.Committed {
		fmt.Fprintf(env.Stderr, "jukebox: booth: finished the interrupted commit of %s\n", id)
	}
	for _, id := range rep.RolledBack {
		fmt.Fprintf(env.Stderr, "jukebox: booth: undid the interrupted commit of %s\n", id)
	}
	return err
}

// open recovers, then opens the chosen (or only) transaction.
func (b *boothTarget) open(ctx context.Context, env *Env) (*sandbox.Tx, error) {
	if err := b.recover(ctx, env); err != nil {
		return nil, err
	}
	id := b.Tx
	if id == "" {
		infos, err := sandbox.List(b.Workspace, sandbox.Options{})
		if err != nil {
			return nil, err
		}
		switch len(infos) {
		case 0:
			return nil, fmt.Errorf("%w in %s", sandbox.ErrNoTx, b.Workspace)
		case 1:
			id = infos[0].ID
		default:
			return nil, fmt.Errorf("%d open booth transactions in %s: choose one with --tx", len(infos), b.Workspace)
		}
	}
	return sandbox.Open(b.Workspace, id, sandbox.Options{})
}

// BoothStatusCmd lists open transactions.
type BoothStatusCmd struct {
	boothTarget
}

// boothStatus is one row of `booth status`.
type boothStatus struct {
	sandbox.TxInfo
	Changes map[sandbox.Op]int `json:"changes"`
}

// Run prints each open transaction with its counts of changes.
func (c *BoothStatusCmd) Run(ctx context.Context, env *Env) error {
	if err := c.recover(ctx, env); err != nil {
		return err
	}
	infos, err := sandbox.List(c.Workspace, sandbox.Options{})
	if err != nil {
		return err
	}
	rows := make([]boothStatus, 0, len(infos))
	for _, info := range infos {
		row := boothStatus{TxInfo: info}
		if tx, err := sandbox.Open(c.Workspace, info.ID, sandbox.Options{}); err == nil {
			if cs, err := tx.Diff(); err == nil {
				row.Changes = cs.Counts()
			}
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
		fmt.Fprintf(env.Stdout, "%s  %s  %s\n", r.ID, r.Created.Format("2006-01-02 15:04:05"), countText(r.Changes))
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

// Run prints every change, one per line, never truncated.
func (c *BoothDiffCmd) Run(ctx context.Context, env *Env) error {
	tx, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	cs, err := tx.Diff()
	if err != nil {
		return err
	}
	return printChangeSet(env.Stdout, cs, c.JSON)
}

// printChangeSet prints a heading that counts each operation, then every
// change, its paths quoted and sensitive ones marked (ChangeSet.String).
func printChangeSet(w io.Writer, cs sandbox.ChangeSet, asJSON bool) error {
	if asJSON {
		return boothJSON(w, cs)
	}
	_, err := fmt.Fprintf(w, "%s: %s\n%s", sandbox.QuotePath(cs.TxID), cs.Summary(), cs.String())
	return err
}

// BoothCommitCmd commits a transaction.
type BoothCommitCmd struct {
	boothTarget
}

// Run commits and prints what was applied; conflicts are listed.
func (c *BoothCommitCmd) Run(ctx context.Context, env *Env) error {
	tx, err := c.open(ctx, env)
	if err != nil {
		return err
	}
	cs, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	if !c.JSON {
		fmt.Fprintf(env.Stdout, "committed %s: %d change(s)\n", cs.TxID, len(cs.Changes))
	}
	return printChangeSet(env.Stdout, cs, c.JSON)
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
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	if c.JSON {
		return boothJSON(env.Stdout, map[string]string{"rolled_back": tx.ID()})
	}
	_, err = fmt.Fprintf(env.Stdout, "rolled back %s\n", tx.ID())
	return err
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
	fmt.Fprintf(env.Stderr, "jukebox: booth: %s (wasm, in process)\n", tx.ID())
	code, err := tx.RunWasm(ctx, wasm, sandbox.WasmOptions{
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
