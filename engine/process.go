package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/internal/keeper"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// child is the agent process with its output captured.
type child struct {
	cmd    *exec.Cmd
	jobs   jobs  // the agent's process group and the terminal (jobs_linux.go)
	keep   *kept // the keeper of the agent's tree (keep_linux.go), or nil
	grace  time.Duration
	wg     sync.WaitGroup
	pipes  [2]*os.File // read ends of the child's stdout and stderr
	exited atomic.Bool // the child has exited: reads give up after outputIdle without data
	*outputs
}

// outputIdle is how long, once the agent has exited, its output pipes may
// stay silent before jukebox stops reading them: a grandchild that keeps
// them open must not hang the run, while output still flowing (to a slow
// terminal) is read to its end.
const outputIdle = 2 * time.Second

// outputs passes the agent's output through and records it.
type outputs struct {
	tape *tapefmt.Writer
	emit func(Event)
	// wrote keeps a frame the tape refused for the run's result (the
	// proxy's, which names the first): nil keeps nothing.
	wrote  func(frame string, err error)
	mu     sync.Mutex
	stdout []byte // everything the child wrote to stdout, when keepStdout
	// keepStdout keeps stdout for replay's comparison (stdoutCopy).
	keepStdout bool
	// wmu makes the passing on one write at a time, as os/exec does for a
	// Stdout and Stderr that are the same writer (a bytes.Buffer for both
	// is a common way to call Record).
	wmu sync.Mutex
}

// maxHeld bounds the output held back for a line's end.
const maxHeld = 64 << 10

// pass gives one piece of output to w and to replay's copy. It returns
// w's error when w is a pipe nobody reads any longer (brokenPipe); other
// errors of w leave the output recorded and the agent running.
func (o *outputs) pass(fd int, data []byte, w io.Writer) (err error) {
	if w != nil {
		o.wmu.Lock()
		_, err = w.Write(data)
		o.wmu.Unlock()
		if !brokenPipe(err) {
			err = nil
		}
	}
	if fd == 1 && o.keepStdout {
		o.mu.Lock()
		o.stdout = append(o.stdout, data...)
		o.mu.Unlock()
	}
	return err
}

// hold passes data on at once and records the whole lines held so far
// (all of them past maxHeld); it returns what is still held, and pass's
// error. Output is kept in whole lines so that the credential rules and
// the --redact patterns see a line the agent wrote in pieces (streamed
// tokens, printed as they came), which the terminal still gets as they
// come.
func (o *outputs) hold(fd int, held, data []byte, w io.Writer) ([]byte, error) {
	err := o.pass(fd, data, w)
	held = append(held, data...)
	cut := bytes.LastIndexByte(held, '\n') + 1
	if len(held) > maxHeld {
		cut = len(held)
	}
	if cut > 0 {
		o.record(fd, held[:cut])
		held = append([]byte(nil), held[cut:]...)
	}
	return held, err
}

// record writes one piece of output on the tape and tells the listeners.
func (o *outputs) record(fd int, data []byte) {
	var seq uint64
	if o.tape != nil {
		var err error
		if seq, err = o.tape.Append(0, tapefmt.Output{Fd: fd, Data: data}); err != nil && o.wrote != nil {
			o.wrote(fmt.Sprintf("proc.output of fd %d", fd), err)
		}
	}
	o.emit(Event{Kind: EventOutput, Seq: seq, Data: data})
}

// lineWriter is an io.Writer for one stream (a booth's agent's, which
// os/exec copies): it passes what it is given on at once and records it
// as child.copy does, in whole lines (hold); flush records what is held
// once the stream has ended. A pipe whose reader is gone fails the write,
// so that the agent's next write fails too (brokenPipe).
type lineWriter struct {
	o    *outputs
	fd   int
	w    io.Writer
	held []byte
}

// writer is the lineWriter for stream fd, passing it on to w.
func (o *outputs) writer(fd int, w io.Writer) *lineWriter { return &lineWriter{o: o, fd: fd, w: w} }

func (l *lineWriter) Write(p []byte) (int, error) {
	var err error
	if l.held, err = l.o.hold(l.fd, l.held, p, l.w); err != nil {
		return 0, err // the pipe's reader is gone: the agent's write fails as it would
	}
	return len(p), nil
}

// flush records the part line still held, once the stream has ended.
func (l *lineWriter) flush() {
	if len(l.held) > 0 {
		l.o.record(l.fd, l.held)
		l.held = nil
	}
}

// serial is w written one write at a time with the streams' writes (nil
// stays nil): what the booth notes while the agent runs goes to a writer
// that may be its Stderr too.
func (o *outputs) serial(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return writerFunc(func(p []byte) (int, error) {
		o.wmu.Lock()
		defer o.wmu.Unlock()
		return w.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// stdoutCopy returns everything the agent wrote to its stdout.
func (o *outputs) stdoutCopy() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stdout
}

// startChild starts argv with env in dir; its stdout and stderr go to the
// given writers and onto the tape as they come. runDir, the run's capture
// files, is removed by the keeper if jukebox dies before the end.
// pre, a keeper started ahead (preKeep), starts the agent when it can;
// otherwise it is released, and a keeper is started with the agent.
func startChild(o RunOptions, env []string, outs *outputs, runDir string, pre *prekept) (*child, error) {
	if pre != nil {
		c, err := startHanded(pre, o, env, outs, runDir)
		if !errors.Is(err, errKeeperMismatch) && !errors.Is(err, errKeeperGone) && !errors.Is(err, errNotHanded) {
			return c, err
		}
	}
	c, err := startKept(o, env, outs, false, runDir)
	if errors.Is(err, errKeeperMismatch) {
		// jukebox-booth beside jukebox is from another install: it
		// started nothing, and jukebox keeps the agent itself.
		c, err = startKept(o, env, outs, true, runDir)
	}
	return c, err
}

// startKept is startChild with the keeper jukebox itself (self) or, where
// one is installed, jukebox-booth.
func startKept(o RunOptions, env []string, outs *outputs, self bool, runDir string) (*child, error) {
	c := &child{cmd: exec.Command(o.Argv[0], o.Argv[1:]...), outputs: outs}
	c.cmd.Dir, c.cmd.Env, c.cmd.Stdin = o.Dir, env, o.Stdin
	// Pipes of our own, not exec's: exec's would be closed by Wait, losing
	// output that a slow terminal has not taken yet.
	var writeEnds [2]*os.File
	for i := range c.pipes {
		r, w, err := os.Pipe()
		if err != nil {
			c.closePipes(writeEnds[:])
			return nil, err
		}
		c.pipes[i], writeEnds[i] = r, w
	}
	c.cmd.Stdout, c.cmd.Stderr = writeEnds[0], writeEnds[1]
	c.grace = cmp.Or(o.StopGrace, DefaultGrace)
	if c.keep = keepUnder(c.cmd, c.grace, self, runDir); c.keep == nil {
		dieWithUs(c.cmd) // the agent alone: the keeper outlives jukebox to end the tree
	}
	c.jobs.prepare(c.cmd, o.Stdin)
	err := c.cmd.Start()
	c.closePipes(writeEnds[:]) // the child holds its own copies now
	if err == nil {
		if err = c.keep.started(); err != nil {
			c.cmd.Wait()
		}
	}
	if err != nil {
		c.jobs.done()
		c.closePipes(c.pipes[:])
		return nil, err
	}
	c.follow(o)
	return c, nil
}

// startHanded starts the agent under pre, a keeper started ahead: the
// command goes to it as exec.Command would have made it. A command that
// is not found, or a keeper that cannot take it (built from other source,
// ended), is errNotHanded, errKeeperMismatch or errKeeperGone, pre
// released: startChild starts it the usual way, which says so.
func startHanded(pre *prekept, o RunOptions, env []string, outs *outputs, runDir string) (*child, error) {
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	if cmd.Err != nil {
		pre.release()
		return nil, errNotHanded
	}
	err := pre.hand(keeper.Command{Path: cmd.Path, Args: cmd.Args, Env: env, Dir: o.Dir, Remove: runDir})
	if err != nil {
		pre.cmd.Wait()
		for _, f := range pre.pipes {
			f.Close()
		}
		return nil, err
	}
	c := &child{cmd: pre.cmd, outputs: outs, pipes: pre.pipes, keep: pre.k, grace: cmp.Or(o.StopGrace, DefaultGrace)}
	c.follow(o)
	return c, nil
}

// errNotHanded: the agent's command was not given to the keeper started
// ahead.
var errNotHanded = errors.New("not handed to the keeper started ahead")

// follow notes the started agent's group and passes its output on.
func (c *child) follow(o RunOptions) {
	c.jobs.started(c.cmd.Process.Pid)
	terms := []io.Writer{o.Stdout, o.Stderr}
	for i, p := range c.pipes {
		c.wg.Add(1)
		go c.copy(i+1, p, terms[i])
	}
}

func (c *child) closePipes(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// copy passes one stream through and records each piece as it arrives,
// until the stream ends or, once the child has exited, stays idle. When
// w is a pipe whose reader is gone (jukebox piped into head), the stream
// is closed: the agent's next write to it fails as it would have without
// jukebox (SIGPIPE), and the run ends and its tape closes as any other.
func (c *child) copy(fd int, r *os.File, w io.Writer) {
	defer c.wg.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	var held []byte // output held for its line's end (outputs.hold)
	for {
		if c.exited.Load() {
			r.SetReadDeadline(time.Now().Add(outputIdle))
		}
		n, err := r.Read(buf)
		var werr error
		if n > 0 {
			held, werr = c.hold(fd, held, buf[:n], w)
		}
		if err != nil || werr != nil {
			if len(held) > 0 {
				c.record(fd, held)
			}
			return
		}
	}
}

// wait waits for the child and its output, forwarding what arrives on sigs
// meanwhile (RunOptions.Signals; nil forwards nothing), and returns its exit
// status. Cancelling ctx stops the child; a signal on replayed stops it
// as the recording was (SIGINT or the recording's stop signal, then the
// end after the grace), the run's end not counted as stopped by the user.
func (c *child) wait(ctx context.Context, sigs <-chan os.Signal, replayed <-chan os.Signal) tapefmt.RunEnd {
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	var end tapefmt.RunEnd
	stops := 0
	byUser, byReplay := false, false
	for {
		select {
		case s := <-sigs:
			byUser = true
			if s == os.Interrupt {
				end.Reason = tapefmt.ReasonInterrupted
			}
			if sig, ok := s.(syscall.Signal); ok && end.Stopped == "" {
				end.Stopped = signalName(sig)
			}
			c.jobs.forward(c.cmd.Process, s)
			stops++
			c.escalate(stops)
		case s := <-replayed:
			byReplay = true
			c.jobs.forward(c.cmd.Process, s)
			stops++
			c.escalate(stops)
			replayed = nil // once
		case <-ctx.Done():
			end.Reason = tapefmt.ReasonCancelled
			c.kill(3 * time.Second)
			ctx = context.Background() // kill once
		case err := <-done:
			c.jobs.done()
			c.exited.Store(true)
			for _, p := range c.pipes {
				p.SetReadDeadline(time.Now().Add(outputIdle)) // wakes a read with nothing to come
			}
			c.wg.Wait()
			end = exitStatus(c.cmd, err, end)
			c.keep.settle(&end, c.cmd.Process.Pid)
			if byReplay && !byUser && end.Reason == tapefmt.ReasonInterrupted {
				end.Reason = "" // the keeper saw the replay's SIGINT, not the user's
			}
			if byReplay && !byUser {
				end.Stopped = ""
			}
			return end
		}
	}
}

// escalate applies the booth's rule to the stops stop signals forwarded so
// far: the first gives the agent grace to exit, a second, or the end of
// grace, ends it. Under the keeper, which is in the agent's group and so
// gets each of them (and the terminal's Ctrl-C, which jukebox never sees),
// the keeper applies it.
func (c *child) escalate(stops int) {
	switch {
	case c.keep != nil:
	case stops == 1:
		time.AfterFunc(c.grace, c.end)
	default:
		c.end()
	}
}

// kill stops the child: SIGTERM, then, after grace, the end (SIGKILL).
func (c *child) kill(grace time.Duration) {
	c.jobs.forward(c.cmd.Process, syscall.SIGTERM)
	time.AfterFunc(grace, c.end)
}

// end kills the agent: under the keeper, its whole tree.
func (c *child) end() {
	if c.keep != nil {
		c.keep.end()
		return
	}
	c.cmd.Process.Kill()
}

func exitStatus(cmd *exec.Cmd, err error, end tapefmt.RunEnd) tapefmt.RunEnd {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		end.Error = err.Error()
	}
	if cmd.ProcessState == nil {
		end.ExitCode = -1
		return end
	}
	st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && st.Signaled():
		end.Signal, end.ExitCode = signalName(st.Signal()), 128+int(st.Signal())
	default:
		end.ExitCode = cmd.ProcessState.ExitCode()
	}
	return end
}

// brokenPipe reports an error of writing to a pipe whose reader is gone
// (EPIPE): jukebox's own output piped into a reader that stopped early.
func brokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }
