package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"

	"github.com/jukebox-os/jukebox/internal/syncio"
)

// ShellOptions configure Shell.
type ShellOptions struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Env    []string // nil means this process's environment
	// Mode is the staging mode for external commands (see Exec).
	Mode Mode
	// Notice gets the one-line mode notice of each external command;
	// nil discards them.
	Notice io.Writer
	// Net is the external commands' network (ExecOptions.Net): NetNone
	// gives them a namespace of their own with loopback alone.
	Net Net
}

// devWritable are the files outside the workspace a booth shell may write.
var devWritable = map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}

// Shell returns a mvdan.cc/sh interpreter in the transaction tx: it
// starts in the workspace, and its redirections, builtins (test, cd,
// globbing) and directory reads go through the staged view (Tx.Files);
// external commands run through Exec in tx, in the namespace overlay (or
// its fallback), one at a time: a pipeline of two external commands stops
// the script with an error that is ErrOneAtATime (its message on Stderr),
// never a pipeline's answer made of one side. Paths outside the workspace
// may be read; only /dev/null, /dev/stdout and /dev/stderr may be written
// there.
func Shell(tx *Tx, o ShellOptions) (*interp.Runner, error) {
	// The stages of a pipeline write these at once (each command's
	// copying goroutine, and the shell's own messages).
	out := &stopWriter{w: syncio.NewWriter(orDiscard(o.Stdout))}
	sh := &boothShell{tx: tx, files: tx.Files(), o: o, out: out}
	return interp.New(
		interp.Dir(tx.ws.root),
		interp.Env(expand.ListEnviron(envOrSelf(o.Env)...)),
		interp.StdIO(o.Stdin, out, syncio.NewWriter(orDiscard(o.Stderr))),
		interp.OpenHandler(sh.open),
		interp.StatHandler(sh.stat),
		interp.ReadDirHandler2(sh.readDir),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.exec }),
	)
}

type boothShell struct {
	tx    *Tx
	files *Files
	o     ShellOptions
	out   *stopWriter
}

// stopWriter passes writes on until stopped, then drops them: once a
// pipeline's command is refused (ErrOneAtATime) what its other side
// writes is that side's answer alone (wc -l counting nothing: "0").
type stopWriter struct {
	w       io.Writer
	stopped atomic.Bool
}

func (s *stopWriter) Write(p []byte) (int, error) {
	if s.stopped.Load() {
		return len(p), nil
	}
	return s.w.Write(p)
}

// inside maps a path (relative ones to the shell's directory) to a
// workspace-relative one.
func (s *boothShell) inside(ctx context.Context, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(interp.HandlerCtx(ctx).Dir, p)
	}
	rel, err := filepath.Rel(s.tx.ws.root, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

func (s *boothShell) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	rel, ok := s.inside(ctx, p)
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
	switch {
	case ok:
		return s.files.OpenFile(rel, flag, perm)
	case writes && !devWritable[p]:
		return nil, pathErr("open", p, ErrEscape)
	}
	return os.OpenFile(p, flag, perm)
}

func (s *boothShell) stat(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	rel, ok := s.inside(ctx, p)
	switch {
	case !ok && follow:
		return os.Stat(p)
	case !ok:
		return os.Lstat(p)
	case follow:
		return s.files.Stat(rel)
	}
	return s.files.Lstat(rel)
}

func (s *boothShell) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	rel, ok := s.inside(ctx, p)
	if !ok {
		return os.ReadDir(p)
	}
	list, err := s.files.ReadDir(rel)
	out := make([]fs.DirEntry, len(list))
	for i, fi := range list {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, err
}

// exec runs an external command in the booth.
func (s *boothShell) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	rel, ok := s.inside(ctx, hc.Dir)
	if !ok {
		return pathErr("exec", hc.Dir, ErrEscape)
	}
	var env []string
	hc.Env.Each(func(name string, v expand.Variable) bool {
		if v.Exported && v.IsSet() {
			env = append(env, name+"="+v.String())
		}
		return true
	})
	res, err := Exec(ctx, s.tx, ExecOptions{
		Args: args, Dir: rel, Env: env, Mode: s.o.Mode, Notice: orDiscard(s.o.Notice), Net: s.o.Net,
		Stdin: hc.Stdin, Stdout: hc.Stdout, Stderr: hc.Stderr,
	})
	if err != nil {
		// The command before it in a pipeline writes on: its reader
		// gone, it ends as it would in a shell (its writes fail).
		if r, ok := hc.Stdin.(*io.PipeReader); ok {
			r.CloseWithError(err)
		}
		if errors.Is(err, ErrOneAtATime) {
			// Not the command's failure but the booth's: going on as a
			// shell does after a failed command made a pipeline's answer
			// wrong with status 0 (ls | wc -l counted nothing). The
			// script stops here, its status 126 (ErrOneAtATime), and
			// nothing more reaches its standard output.
			s.out.stopped.Store(true)
			fmt.Fprintf(hc.Stderr, "%s: %v\n", args[0], err)
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return err
	}
	if res.ExitCode != 0 {
		return interp.ExitStatus(uint8(res.ExitCode))
	}
	return nil
}
