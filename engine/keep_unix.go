//go:build unix

package engine

import (
	"bufio"
	"errors"
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
		f.Close()
	}
	line, err := k.rep.ReadString('\n')
	if err != nil && k.helper {
		close(k.done)
		return errKeeperMismatch // a jukebox-booth from before the keeper
	}
	if err != nil {
		close(k.done)
		return errors.New("the keeper ended before the agent started")
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
