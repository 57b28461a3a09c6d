package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Mode is how a child process is staged: the tape's staging modes
// (tx.begin's mode).
type Mode = tapefmt.StagingMode

// Staging modes. ModeAuto is the overlay: confined, or not run at all.
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
	// Mode is the staging mode: ModeAuto (or "") and ModeOverlay run the
	// agent confined or not at all (ErrCannotConfine); ModeCopy and
	// ModeReflink run it unconfined, in a copy, and say so before it starts.
	Mode Mode
	// Notice receives one line naming the staging mode in use (and why
	// the overlay was not); nil means Stderr, io.Discard silences it.
	Notice io.Writer
	// Net is the child's network: NetHost (or "") as jukebox's own;
	// NetNone a network namespace of its own where only Endpoints (the
	// 127.0.0.1:PORT addresses jukebox serves for the run) are reachable.
	// NetNone needs the overlay: copy mode cannot confine.
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
	// Carry takes, under NetNone, each plain TCP connection the child
	// makes to a name the booth's resolver answered (any port but 80 and
	// 443, which go through the proxy), in a goroutine of its own; it
	// closes the connection when done. Nil refuses them (--hermetic): the
	// child gets ECONNREFUSED and OnNetRefused hears it, Hermetic set.
	Carry func(CarriedConn)
	// Signals are passed on to the child while it runs: in the overlay to
	// the booth's init, which passes them to the command (to its process
	// group, for those a terminal sends); in a copy to the child's reaper,
	// which passes SIGINT, SIGHUP and SIGQUIT to the agent and ends the
	// tree on SIGTERM. Nil passes nothing.
	Signals <-chan os.Signal
	// View, when set, is given the workspace as the child sees it while
	// it runs (the overlay's merged view, or the copy) as a root that
	// keeps every path inside it: what is written through it is the
	// child's own writing, staged with it. It is given once the child
	// runs, and View(nil) once the child has ended, before the root is
	// closed: the caller stops using it then. When the view cannot be
	// opened, View is never called.
	View func(*os.Root)
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

// CarriedConn is a plain TCP connection of a NetNone child to Host:Port,
// a name the booth's resolver answered (ExecOptions.Carry). Conn carries
// the child's bytes; closing its write half passes the end on.
type CarriedConn struct {
	Host string
	Port int
	Conn net.Conn
}

// Net is a booth child's network.
type Net string

// Network modes.
const (
	NetHost Net = "host" // the host's network, as jukebox has it
	NetNone Net = "none" // loopback only, reaching jukebox's own endpoints
)

// ExecResult is how a booth child ended.
type ExecResult struct {
	Mode     Mode `json:"mode"`
	ExitCode int  `json:"exit_code"`        // 128+N when signal N ended it
	Signal   int  `json:"signal,omitempty"` // the signal that ended it
	// Confined is true when the child ran confined: read-only system,
	// private /tmp, own PID namespace, capabilities dropped, seccomp.
	Confined bool `json:"confined"`
	// CopyPaths are the files a copy run's agent wrote that still hold
	// the copy's absolute path, which is gone after the run: binary
	// files (text is rewritten to the real path).
	CopyPaths []string `json:"copy_paths,omitempty"`
	// Foreign counts the workspace's entries a non-root overlay booth
	// could not let the agent change (owned by another user or group);
	// ForeignPaths are the first few.
	Foreign      int      `json:"foreign,omitempty"`
	ForeignPaths []string `json:"foreign_paths,omitempty"`
	// ForeignPartial: the workspace was not all read when the run ended,
	// so there may be more.
	ForeignPartial bool `json:"foreign_partial,omitempty"`
}

// errSetup marks a failure to build the namespace overlay (not the child's).
var errSetup = errors.New("sandbox: namespace overlay refused")

// errNoUserNS marks a kernel that refused the user namespace itself.
var errNoUserNS = fmt.Errorf("%w: user namespace", errSetup)

// ErrOneAtATime is Exec's answer while another command of the transaction
// runs (two commands of a shell pipeline): run them as one, sh -c '...'.
var ErrOneAtATime = errors.New("sandbox: a transaction runs one command at a time: a pipeline of two commands runs as one command, sh -c '...'")

// Exec runs a child process in the transaction tx, whose view of the
// workspace is the staged view; what it writes, deletes or replaces there
// is staged in tx. A non-zero exit is reported in ExecResult, not as
// error. A folder as a standard stream is refused (ErrStreamDir), and a
// second command while one runs (ErrOneAtATime).
func Exec(ctx context.Context, tx *Tx, o ExecOptions) (ExecResult, error) {
	if len(o.Args) == 0 {
		return ExecResult{}, errors.New("sandbox: exec: no command")
	}
	if err := CheckStreams(o.Stdin, o.Stdout, o.Stderr); err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	dir, err := tx.ws.cleanRel("exec", orDot(o.Dir))
	if err != nil {
		return ExecResult{}, err
	}
	if !tx.running.TryLock() {
		return ExecResult{ExitCode: -1}, ErrOneAtATime
	}
	defer tx.running.Unlock()
	notice := o.Notice
	if notice == nil {
		notice = orDiscard(o.Stderr)
	}
	if o.Mode == "" || o.Mode == ModeAuto || o.Mode == ModeOverlay {
		writes := writable(tx, o) // execOverlay holds tx.mu while it runs
		res, err := execOverlay(ctx, tx, o, dir, func() {
			fmt.Fprintf(notice, "jukebox: booth: overlay, confined (workspace staged%s; /tmp and /dev/shm private, the host's /tmp read-only beneath, its sockets unreachable; the rest read-only; own PID namespace; network %s)\n", writes, orHost(o.Net))
		})
		if errors.Is(err, errSetup) {
			// Fail closed: the agent is never run unconfined unless
			// asked for by name (ModeCopy, ModeReflink).
			return res, fmt.Errorf("%w; why: %v", ErrCannotConfine, err)
		}
		if err == nil {
			var all bool
			res.Foreign, res.ForeignPaths, all = tx.ForeignOwned()
			res.ForeignPartial = !all
			noteForeign(notice, res)
		}
		return res, err
	}
	if o.Net == NetNone {
		return ExecResult{Mode: o.Mode, ExitCode: -1}, fmt.Errorf("sandbox: --net none needs the overlay booth; %s mode cannot confine", o.Mode)
	}
	if roots := tx.Roots(); len(roots) > 0 {
		return ExecResult{Mode: o.Mode, ExitCode: -1}, fmt.Errorf("sandbox: staged folders outside the workspace (%s) need the overlay booth; %s mode stages the workspace alone", roots[0].Root(), o.Mode)
	}
	res, err := execCopy(ctx, tx, o, dir, func(m Mode) {
		fmt.Fprintf(notice, "jukebox: booth: %s of the workspace, run outside it, NOT confined: what the agent changes in the copy is staged, but it can write anywhere you can, the real workspace too by its absolute path\n", m)
	})
	if err == nil && len(res.CopyPaths) > 0 {
		fmt.Fprintf(notice, "jukebox: booth: %d binary file(s) the agent wrote still name the copy's folder, which is gone after the run (text files were rewritten to the real path): %s\n", len(res.CopyPaths), quoteSome(res.CopyPaths, 10))
	}
	return res, err
}

// noteForeign says which entries the agent could not change in a
// non-root overlay booth, and why: otherwise all it saw was "Value too
// large for defined data type".
func noteForeign(notice io.Writer, res ExecResult) {
	if res.Foreign == 0 {
		return
	}
	what := "entries of the workspace belong"
	if res.Foreign == 1 {
		what = "entry of the workspace belongs"
	}
	n := strconv.Itoa(res.Foreign)
	if res.ForeignPartial {
		n = "at least " + n
	}
	fmt.Fprintf(notice, "jukebox: booth: note: %s %s to another user or group than yours (among them %s): "+
		"a booth run as a non-root user maps only your own ids, so the agent cannot write to, rename or chmod them there "+
		"(it gets EOVERFLOW, \"Value too large for defined data type\", when it tries; deleting them works). Give them your group (chgrp), "+
		"run jukebox as root, or use --booth-mode copy (not confined)\n", n, what, quoteAll(res.ForeignPaths[:min(3, len(res.ForeignPaths))]))
}

// ErrCannotConfine is Exec's error, and the agent was not started, when
// the mode asked for confinement (ModeAuto, ModeOverlay) and the booth
// cannot give it here: user namespaces or overlayfs refused (a container's
// seccomp profile, an AppArmor userns restriction, a booth inside a
// booth). ModeCopy runs the agent unconfined, when asked for by name.
var ErrCannotConfine = errors.New("sandbox: the booth cannot confine the agent here, so it was not started")

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
		s += "; written live, never rolled back: " + quoteAll(o.WriteLive)
	}
	return s
}

// quoteSome is quoteAll of the first n paths, and how many more there are.
func quoteSome(paths []string, n int) string {
	if len(paths) <= n {
		return quoteAll(paths)
	}
	return fmt.Sprintf("%s and %d more", quoteAll(paths[:n]), len(paths)-n)
}

// quoteAll quotes each path for the terminal, joined by commas.
func quoteAll(paths []string) string {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = termtext.Quote(p)
	}
	return strings.Join(quoted, ", ")
}

func orHost(n Net) Net {
	if n == "" {
		return NetHost
	}
	return n
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
	tmp := filepath.Join(tx.dir, "tmp") // the booth's /tmp's upper layer is mounted here, in the booth alone
	if err := freshDir(tmp); err != nil {
		return ExecResult{}, err
	}
	defer removeAll(tmp)
	hide := hidden(tx.ws, tx.opts)
	spec := nsinit.Spec{Lower: tx.ws.root, Upper: tx.upper, Work: work, TmpUpper: tmp, Dir: tx.real(dir), Args: o.Args, Hide: hide,
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
		stop, err := hostNet(filepath.Join(tx.dir, "net"), o, &spec)
		defer stop()
		if err != nil {
			return ExecResult{Mode: ModeOverlay, ExitCode: -1}, err
		}
	}
	var view *os.Root
	res, err := runInitChild(ctx, spec, o, func(init int) {
		started()
		if o.View != nil {
			if v, err := overlayView(init, tx.ws.root); err == nil {
				view = v
				o.View(v)
			}
		}
	})
	if view != nil {
		o.View(nil)
		view.Close()
	}
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

// ErrNotStarted is Exec's error when the agent could not be started (its
// command, or the interpreter of its script, not found or not
// executable); the message says where, and what the booth hides there.
var ErrNotStarted = errors.New("sandbox: the agent could not start")
