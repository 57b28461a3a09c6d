package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Mode is how a child process is staged: the tape's staging modes
// (tx.begin's mode).
type Mode = tapefmt.StagingMode

// Staging modes. ModeAuto tries the overlay and falls back to a copy.
const (
	ModeAuto    = tapefmt.StagingAuto
	ModeOverlay = tapefmt.StagingOverlay // overlayfs in a user+mount namespace
	ModeReflink = tapefmt.StagingReflink // copy of the staged view sharing extents
	ModeCopy    = tapefmt.StagingCopy    // plain copy of the staged view
)

// ExecOptions describe a child process to run in the booth.
type ExecOptions struct {
	Args   []string // command and arguments; Args[0] is looked up in PATH
	Dir    string   // working directory relative to the workspace; "" is the root
	Env    []string // environment; nil means this process's
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Mode forces a staging mode: ModeCopy skips the namespace attempt.
	// ModeAuto (or "") tries the overlay first.
	Mode Mode
	// Notice receives one line naming the staging mode in use (and why
	// the overlay was not); nil means Stderr, io.Discard silences it.
	Notice io.Writer
	// Net is the child's network: NetHost (or "") as jukebox's own;
	// NetNone a network namespace of its own where only Endpoints (the
	// 127.0.0.1:PORT addresses jukebox serves for the run) are reachable.
	// NetNone needs the overlay: the copy fallback cannot confine.
	Net       Net
	Endpoints []string
	// Protect are files the child must not change: each stays visible,
	// read-only, with its folder (or alone, when the folder holds the
	// workspace). The tape being recorded is one.
	Protect []string
	// WriteLive are absolute paths outside the workspace the child may
	// write directly, unstaged (caches and the like).
	WriteLive []string
	// OnNetRefused hears each connection a NetNone child was refused, as
	// it happens (from another goroutine).
	OnNetRefused func(NetRefusal)
	// Signals are passed on to the child while it runs: in the overlay to
	// the booth's init, which passes them to the command (to its process
	// group, for those a terminal sends); in a copy to the child, except a
	// Ctrl-C or Ctrl-\ the terminal sent it already. Nil passes nothing.
	Signals <-chan os.Signal
}

// forwardSignals passes what arrives on sigs to p, but those skip says
// the child has had already, until stop is called.
func forwardSignals(p *os.Process, sigs <-chan os.Signal, skip func(os.Signal) bool) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if skip == nil || !skip(s) {
					p.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// NetRefusal is a connection a --net none booth refused.
type NetRefusal = nsinit.Refusal

// Net is a booth child's network.
type Net string

// Network modes.
const (
	NetHost Net = "host" // the host's network, as jukebox has it
	NetNone Net = "none" // loopback only, reaching jukebox's own endpoints
)

// ExecResult is how a booth child ended.
type ExecResult struct {
	Mode     Mode   `json:"mode"`
	ExitCode int    `json:"exit_code"`          // 128+N when signal N ended it
	Signal   int    `json:"signal,omitempty"`   // the signal that ended it
	Fallback string `json:"fallback,omitempty"` // why the overlay was not used
	// Confined is true when the child ran confined: read-only system,
	// private /tmp, own PID namespace, capabilities dropped, seccomp.
	Confined bool `json:"confined"`
}

// errSetup marks a failure to build the namespace overlay (not the child's).
var errSetup = errors.New("sandbox: namespace overlay refused")

// errNoUserNS marks a kernel that refused the user namespace itself.
var errNoUserNS = fmt.Errorf("%w: user namespace", errSetup)

// Exec runs a child process in the transaction tx, whose view of the
// workspace is the staged view; what it writes, deletes or replaces there
// is staged in tx. A non-zero exit is reported in ExecResult, not as
// error.
func Exec(ctx context.Context, tx *Tx, o ExecOptions) (ExecResult, error) {
	if len(o.Args) == 0 {
		return ExecResult{}, errors.New("sandbox: exec: no command")
	}
	dir, err := tx.ws.cleanRel("exec", orDot(o.Dir))
	if err != nil {
		return ExecResult{}, err
	}
	notice := o.Notice
	if notice == nil {
		notice = orDiscard(o.Stderr)
	}
	var why string
	if o.Mode == "" || o.Mode == ModeAuto || o.Mode == ModeOverlay {
		writes := writable(tx, o) // execOverlay holds tx.mu while it runs
		res, err := execOverlay(ctx, tx, o, dir, func() {
			fmt.Fprintf(notice, "jukebox: booth: overlay, confined (workspace staged%s; /tmp and /dev/shm private; the rest read-only; own PID namespace; network %s)\n", writes, orHost(o.Net))
		})
		if !errors.Is(err, errSetup) {
			return res, err
		}
		if o.Mode == ModeOverlay || o.Net == NetNone {
			return res, fmt.Errorf("%w; the copy fallback cannot confine", err)
		}
		why = err.Error()
	}
	if o.Net == NetNone {
		return ExecResult{Mode: o.Mode, ExitCode: -1}, fmt.Errorf("sandbox: --net none needs the overlay booth; %s mode cannot confine", o.Mode)
	}
	if roots := tx.Roots(); len(roots) > 0 {
		return ExecResult{Mode: o.Mode, ExitCode: -1}, fmt.Errorf("sandbox: staged folders outside the workspace (%s) need the overlay booth; %s mode stages the workspace alone%s", roots[0].Root(), orAuto(o.Mode), because(why))
	}
	res, err := execCopy(ctx, tx, o, dir)
	res.Fallback = why
	if err == nil {
		fmt.Fprintf(notice, "jukebox: booth: %s of the workspace%s, run outside it: this stages what the agent changes in the copy but does NOT confine the agent, which can write anywhere you can, the real workspace too by its absolute path\n", res.Mode, because(why))
	}
	return res, err
}

// writable lists, for the booth's notice, the folders outside the
// workspace the agent may write: staged ones and live ones, each named.
func writable(tx *Tx, o ExecOptions) string {
	var s string
	for _, r := range tx.Roots() {
		s += ", " + termtext.Quote(r.Root())
	}
	if s != "" {
		s = "; staged with it: " + s[2:]
	}
	if len(o.WriteLive) > 0 {
		quoted := make([]string, len(o.WriteLive))
		for i, p := range o.WriteLive {
			quoted[i] = termtext.Quote(p)
		}
		s += "; written live, never rolled back: " + strings.Join(quoted, ", ")
	}
	return s
}

func orHost(n Net) Net {
	if n == "" {
		return NetHost
	}
	return n
}

func because(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// execOverlay starts the namespace init (nsinit.Path); started is
// called once the command runs confined.
func execOverlay(ctx context.Context, tx *Tx, o ExecOptions, dir string, started func()) (ExecResult, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return ExecResult{}, err
	}
	// The overlay's work folder is made anew for each run: one a crash
	// left behind would be refused (a volatile overlay marks it).
	work := filepath.Join(tx.dir, "work")
	if err := freshDir(work); err != nil {
		return ExecResult{}, err
	}
	defer removeAll(work)
	hide := hidden(tx.ws, tx.opts)
	spec := nsinit.Spec{Lower: tx.ws.root, Upper: tx.upper, Work: work, Dir: tx.real(dir), Args: o.Args, Hide: hide,
		ReadOnly: protected(tx.ws.root, o.Protect, hide), WriteLive: o.WriteLive, NetNone: o.Net == NetNone}
	for _, p := range tx.parts {
		if r, ok := p.(*rootPart); ok {
			w := filepath.Join(r.sub.dir, "work")
			if err := freshDir(w); err != nil {
				return ExecResult{}, err
			}
			defer removeAll(w)
			spec.Staged = append(spec.Staged, nsinit.Staged{Lower: r.sub.ws.root, Upper: r.sub.upper, Work: w})
		}
	}
	if err := nsinit.CheckKept(spec); err != nil {
		return ExecResult{Mode: ModeOverlay, ExitCode: -1}, fmt.Errorf("sandbox: %w", err)
	}
	if spec.NetNone {
		relays, stop, err := hostRelays(filepath.Join(tx.dir, "net"), o.Endpoints)
		defer stop()
		if err != nil {
			return ExecResult{Mode: ModeOverlay, ExitCode: -1}, err
		}
		spec.Relays = relays
	}
	res, err := runInitChild(ctx, spec, o, started)
	res.Mode, res.Confined = ModeOverlay, err == nil
	return res, err
}

// freshDir makes dir empty, removing whatever was there.
func freshDir(dir string) error {
	if err := removeAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}

func envOrSelf(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return env
}

// exitCode turns cmd.Wait's error into an exit code; only failures to run
// at all are errors.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

func orAuto(m Mode) Mode {
	if m == "" || m == ModeAuto {
		return "the copy"
	}
	return m
}
