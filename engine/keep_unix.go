//go:build unix

package engine

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/internal/nsinit"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// kept is jukebox's side of an agent run under the keeper
// (internal/keeper): the lifeline whose closing, or jukebox's death, ends
// the agent's whole tree, and what the keeper reports.
type kept struct {
	life        *os.File    // the lifeline's write end, jukebox's alone
	theirs      [2]*os.File // the keeper's ends, closed here once it runs
	rep         *bufio.Reader
	once        sync.Once
	interrupted atomic.Bool   // a SIGINT reached the agent's group
	agent       int           // the agent's pid, as the keeper reported it
	status      atomic.Int64  // the agent's raw wait status; -1 until reported
	done        chan struct{} // closed when the reports end
	helper      bool          // the keeper is jukebox-booth, not jukebox
}

// keepUnder rewrites cmd to start the keeper, which starts what cmd would
// have (and removes runDir, the run's capture files, if jukebox dies);
// nil (cmd unchanged) when no keeper can be started here. The keeper
// is jukebox-booth where it is installed beside jukebox (nsinit.Path: it
// starts in a few milliseconds, jukebox itself in tens), unless self;
// one built from other source reports keeper.Mismatch before it starts
// anything (errKeeperMismatch), and the caller starts again with self.
func keepUnder(cmd *exec.Cmd, grace time.Duration, self bool, runDir string) *kept {
	exe, err := os.Executable()
	if !keeper.Available() || cmd.Err != nil || err != nil {
		return nil
	}
	helper := false
	if p := nsinit.Path(); !self && p != nsinit.Self {
		exe, helper = p, true // a test binary's chosen jukebox-booth, or the one installed
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil
	}
	cmd.Args = append([]string{exe, cmd.Path}, cmd.Args...)
	cmd.Path = exe
	cmd.Env = append(cmd.Env, keeper.Var(grace))
	if runDir != "" {
		cmd.Env = append(cmd.Env, keeper.RemoveEnv+"="+runDir) // the keeper removes it if jukebox dies
	}
	if helper {
		cmd.Env = append(cmd.Env, keeper.BuildVar())
	}
	cmd.ExtraFiles = []*os.File{lifeR, repW}
	k := &kept{life: lifeW, theirs: [2]*os.File{lifeR, repW}, rep: bufio.NewReader(repR), done: make(chan struct{}), helper: helper}
	k.status.Store(-1)
	return k
}

// started closes the keeper's ends and waits for it to start the agent:
// the error is the agent's failure to start.
func (k *kept) started() error {
	if k == nil {
		return nil
	}
	for _, f := range k.theirs {
		if f != nil { // a keeper started ahead (preKeep) has its own
			f.Close()
		}
	}
	line, err := k.rep.ReadString('\n')
	if err != nil && k.helper {
		close(k.done)
		return errKeeperMismatch // a jukebox-booth from before the keeper
	}
	if err != nil {
		close(k.done)
		return errKeeperGone
	}
	if strings.TrimSpace(line) == keeper.Mismatch {
		close(k.done)
		return errKeeperMismatch
	}
	if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "failed "); ok {
		close(k.done)
		num, msg, _ := strings.Cut(msg, " ")
		n, _ := strconv.Atoi(num)
		return &startError{msg: msg, errno: syscall.Errno(n)}
	}
	if v, ok := strings.CutPrefix(strings.TrimSpace(line), "started "); ok {
		k.agent, _ = strconv.Atoi(v)
	}
	go k.read()
	return nil
}

// errKeeperMismatch is a keeper built from other source than this jukebox:
// it started nothing.
var errKeeperMismatch = errors.New("the keeper beside jukebox was built from other source")

// read follows the keeper's reports until it exits.
func (k *kept) read() {
	defer close(k.done)
	for {
		line, err := k.rep.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSpace(line)
		if line == "interrupt" {
			k.interrupted.Store(true)
		} else if v, ok := strings.CutPrefix(line, "end "); ok {
			if n, err := strconv.Atoi(v); err == nil {
				k.status.Store(int64(n))
			}
		}
	}
}

// end closes the lifeline: the keeper kills the agent's whole tree.
func (k *kept) end() {
	if k != nil {
		k.once.Do(func() { k.life.Close() })
	}
}

// settle puts into end, once the keeper has exited, what it reported: the
// agent's own exit status (the keeper's is its own) and an interrupt that
// reached the agent's group from the terminal, which jukebox never saw.
// pgid is the keeper's, the agent's group.
func (k *kept) settle(end *tapefmt.RunEnd, pgid int) {
	if k == nil {
		return
	}
	k.end()
	<-k.done
	if k.status.Load() < 0 {
		// The keeper was killed (by the agent: it runs as the same user)
		// before it reported: what is left of its group goes now, and of
		// the agent's, where the keeper made the agent one (macOS).
		syscall.Kill(-pgid, syscall.SIGKILL)
		if k.agent > 0 && k.agent != pgid {
			syscall.Kill(-k.agent, syscall.SIGKILL)
		}
	}
	if k.interrupted.Load() && end.Reason == "" {
		end.Reason = tapefmt.ReasonInterrupted
	}
	if st := k.status.Load(); st >= 0 {
		ws := syscall.WaitStatus(st)
		end.Signal, end.ExitCode = "", ws.ExitStatus()
		if ws.Signaled() {
			end.Signal, end.ExitCode = signalName(ws.Signal()), 128+int(ws.Signal())
		}
	}
}

// startError is the keeper's failure to start the agent: its message and
// errno (errors.Is(err, fs.ErrNotExist) holds for a missing command).
type startError struct {
	msg   string
	errno syscall.Errno
}

func (e *startError) Error() string { return e.msg }
func (e *startError) Unwrap() error { return e.errno }

// prekept is a keeper started ahead of its agent (keeper.WaitEnv) while
// the run is set up, so that its start (an exec and a Go runtime's) is not
// on the way to the agent's: once the agent's command is known it is
// handed over (startHanded).
type prekept struct {
	cmd   *exec.Cmd
	k     *kept
	pipes [2]*os.File // read ends of the agent's stdout and stderr
	used  bool        // handed over, or released
}

// preKeep starts a waiting keeper for an agent whose stdin is stdin; nil
// when none can be started here (startChild then starts one with the
// agent), or when the agent takes the terminal (startsAhead): its group
// becomes the terminal's foreground as it starts (jobs), which a keeper
// waiting through the set-up would take early.
func preKeep(stdin io.Reader, grace time.Duration) *prekept {
	exe, err := os.Executable()
	if _, file := stdin.(*os.File); !keeper.Available() || err != nil || !startsAhead(stdin) || (stdin != nil && !file) {
		return nil // another reader: exec's copy of it would start now, and hold release's wait
	}
	helper := false
	if p := nsinit.Path(); p != nsinit.Self {
		exe, helper = p, true
	}
	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w
	}
	outR, outW := pipe()
	errR, errW := pipe()
	lifeR, lifeW := pipe()
	repR, repW := pipe()
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), keeper.Var(grace), keeper.WaitEnv+"=1")
	if helper {
		cmd.Env = append(cmd.Env, keeper.BuildVar())
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, outW, errW
	cmd.ExtraFiles = []*os.File{lifeR, repW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the agent's group, as jobs makes it
	err = cmd.Start()
	for _, f := range []*os.File{outW, errW, lifeR, repW} {
		f.Close() // the keeper's own now
	}
	if err != nil {
		for _, f := range []*os.File{outR, errR, lifeW, repR} {
			f.Close()
		}
		return nil
	}
	k := &kept{life: lifeW, rep: bufio.NewReader(repR), done: make(chan struct{}), helper: helper}
	k.status.Store(-1)
	return &prekept{cmd: cmd, k: k, pipes: [2]*os.File{outR, errR}}
}

// hand gives the keeper the agent's command and waits for it to start it
// (kept.started).
func (p *prekept) hand(c keeper.Command) error {
	p.used = true
	line, err := json.Marshal(c)
	if err == nil {
		_, err = p.k.life.Write(append(line, '\n'))
	}
	if err != nil {
		return errKeeperGone
	}
	return p.k.started()
}

// errKeeperGone: the keeper started ahead ended before it took the agent.
var errKeeperGone = errors.New("the keeper ended before the agent started")

// release ends a keeper started ahead that was handed no agent: its
// lifeline closes, and it exits having started nothing. A nil or handed
// one is left alone.
func (p *prekept) release() {
	if p == nil || p.used {
		return
	}
	p.used = true
	p.k.life.Close()
	p.cmd.Wait()
	for _, f := range p.pipes {
		f.Close()
	}
}
