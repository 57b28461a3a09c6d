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

// Shell returns a mvdan.cc/sh interpreter in the transaction tx: it
// starts in the workspace, and its redirections, builtins (test, cd,
// globbing) and directory reads go through the staged view (Tx.Files);
// external commands run through Exec in tx, in the namespace overlay (or
// its fallback), one at a time: a pipeline of two external commands stops
// the script with an error that is ErrOneAtATime (its message on Stderr),
// never a pipeline's answer made of one side. Outside the workspace the
// shell itself (its redirections, test, globs) reaches /dev/null and its
// own /dev/stdin, /dev/stdout and /dev/stderr alone; its commands read
// what the booth shows them.
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

// open opens a redirection's file. The shell runs in this process, not
// in the booth: outside the workspace it opens only /dev/null and its own
// streams. It opened any path there for reading, as this process (the
// booth's key, which the booth hides from the agent, /proc/self/environ
// with the secrets --pg keeps from the agent), and /dev/stdout as this
// process's own stdout, which `> /dev/stdout` truncated (the user's log,
// and jukebox's messages in it). A command reads other paths itself
// (cat /etc/hosts), in the booth.
func (s *boothShell) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if rel, ok := s.inside(ctx, p); ok {
		return s.files.OpenFile(rel, flag, perm)
	}
	hc := interp.HandlerCtx(ctx)
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
	switch filepath.Clean(p) {
	case os.DevNull:
		return nullFile{}, nil
	case "/dev/stdout", "/dev/fd/1":
		if writes && flag&os.O_RDWR == 0 {
			return stream{w: hc.Stdout}, nil
		}
	case "/dev/stderr", "/dev/fd/2":
		if writes && flag&os.O_RDWR == 0 {
			return stream{w: hc.Stderr}, nil
		}
	case "/dev/stdin", "/dev/fd/0":
		if !writes {
			return stream{r: hc.Stdin}, nil
		}
	}
	return nil, pathErr("open", p, ErrEscape)
}

// stream is one of the shell's own streams opened by name (/dev/stdout):
// a write goes where the shell's output goes, never truncating it.
type stream struct {
	r io.Reader
	w io.Writer
}

func (s stream) Read(b []byte) (int, error) {
	if s.r == nil {
		return 0, io.EOF
	}
	return s.r.Read(b)
}

func (s stream) Write(b []byte) (int, error) {
	if s.w == nil {
		return 0, os.ErrInvalid
	}
	return s.w.Write(b)
}

func (stream) Close() error { return nil }

// nullFile is /dev/null: reads end at once, writes go nowhere.
type nullFile struct{}

func (nullFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullFile) Write(b []byte) (int, error) { return len(b), nil }
func (nullFile) Close() error                { return nil }

// stat and readDir see the workspace alone, as open does: outside it they
// told what the booth hides (`[ -e` of the booth's key, a glob listing the
// host's folders).
func (s *boothShell) stat(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	rel, ok := s.inside(ctx, p)
	switch {
	case !ok:
		return nil, pathErr("stat", p, ErrEscape)
	case follow:
		return s.files.Stat(rel)
	}
	return s.files.Lstat(rel)
}

func (s *boothShell) readDir(ctx context.Context, p string) ([]fs.DirEntry, error) {
	rel, ok := s.inside(ctx, p)
	if !ok {
		return nil, pathErr("open", p, ErrEscape)
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
