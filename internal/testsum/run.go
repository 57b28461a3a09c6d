package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// job is a test binary to run (go test -c built it): its package's
// import path, the folder it runs in (the package's, as go test runs
// it), the binary and the flags of its own.
type job struct {
	pkg, dir, bin string
	args          []string
}

// readJobs reads a job file: a line a job, its fields separated by tabs
// (import path, folder, binary, then flags); empty lines and lines that
// start with # are left out.
func readJobs(name string) ([]job, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var jobs []job
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) < 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("%s:%d: want IMPORTPATH<tab>FOLDER<tab>BINARY[<tab>FLAG...], got %q", name, i+1, l)
		}
		jobs = append(jobs, job{pkg: f[0], dir: f[1], bin: f[2], args: f[3:]})
	}
	return jobs, nil
}

// jobEnd is a job's process ending: what the reader prints as go test
// would ("ok  \tPKG\t1.234s").
type jobEnd struct {
	in      int // the job's index
	elapsed time.Duration
	err     error
}

// runner is how the jobs run: at most n at once, each test binary under
// test2json (the program at t2j) with flags before its own. A job still
// running after timeout (0: none) is killed with what it started, as go
// test kills a binary a minute past its -timeout; once its process has
// exited, its output is read for at most waitDelay more (a process it
// left behind may hold the pipe open), as go test does.
type runner struct {
	n         int
	t2j       string
	flags     []string
	timeout   time.Duration
	waitDelay time.Duration
	// stop, when done, kills every job still running (an interrupt).
	stop context.Context
	// self, when set, is this program, which test2json starts to start
	// the test binary in turn (execTestArg).
	self string
}

// execTestArg, first, has testsum start the test binary that follows
// (execTest).
const execTestArg = "-exec-test"

// run runs jobs in the order given and reads their events as read does.
// A job whose process fails without a failing event (it did not start,
// test2json could not run it, it was killed) fails its package. It
// returns how long each job that ended took, by its index.
func (s *summary) run(jobs []job, r runner) map[int]time.Duration {
	took := map[int]time.Duration{}
	lines := make(chan line)
	ends := make(chan jobEnd)
	slots := make(chan struct{}, max(r.n, 1))
	go func() {
		for i, j := range jobs {
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				ends <- r.runJob(i, j, lines)
			}()
		}
	}()
	for open := len(jobs); open > 0; {
		select {
		case l := <-lines:
			s.line(l)
		case e := <-ends:
			open--
			took[e.in] = e.elapsed
			s.jobEnded(jobs[e.in], e)
		}
	}
	return took
}

// runJob runs one test binary, its events to lines, and says how it ended
// once every line is sent.
func (r runner) runJob(in int, j job, lines chan<- line) jobEnd {
	start := time.Now()
	parent := r.stop
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	if r.timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, r.timeout)
	}
	defer cancel()
	// Paths as given, not as seen from the package's folder the job runs in.
	t2j, bin := absolute(r.t2j), absolute(j.bin)
	argv := []string{"-p", j.pkg, bin}
	if r.self != "" {
		argv = []string{"-p", j.pkg, r.self, execTestArg, bin}
	}
	argv = append(append(append(argv, "-test.v=test2json"), r.flags...), j.args...)
	cmd := exec.CommandContext(ctx, t2j, argv...)
	cmd.Dir = j.dir
	cmd.Env = append(os.Environ(), "PWD="+j.dir) // as go test runs it
	// Killed with what it started.
	ownGroup(cmd)
	cmd.WaitDelay = r.waitDelay
	out := &lineWriter{in: in, lines: lines}
	cmd.Stdout = out
	// test2json's own errors; the binary's output goes into the events.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	out.flush()
	switch {
	case parent.Err() != nil:
		err = fmt.Errorf("interrupted (%w)", err)
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("killed %v after it started, with what it started: it did not end (%w)", r.timeout, err)
	case errors.Is(err, exec.ErrWaitDelay):
		err = fmt.Errorf("its output was still open %v after it exited: a process it started holds it (%w)", r.waitDelay, err)
	}
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return jobEnd{in: in, elapsed: time.Since(start), err: err}
}

func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil && strings.ContainsRune(path, filepath.Separator) {
		return abs
	}
	return path // a name looked up on PATH
}

// lineWriter sends what a job writes to lines, a whole line at a time.
type lineWriter struct {
	in    int
	buf   []byte
	lines chan<- line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.lines <- line{w.in, slices.Clone(w.buf[:i])}
		w.buf = w.buf[i+1:]
	}
	w.buf = append(w.buf[:0:0], w.buf...) // what is left, not what was sent
	return len(p), nil
}

// flush sends a last line that did not end.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.lines <- line{w.in, w.buf}
		w.buf = nil
	}
}

// jobEnded prints a job's result line and fails its package when the
// process failed and no event said so.
func (s *summary) jobEnded(j job, end jobEnd) {
	in := end.in
	k := key{in, short(j.pkg), ""}
	failed := slices.Contains(s.failed, k)
	if end.err != nil && !failed {
		s.output[k] = append(s.output[k], fmt.Sprintf("%s: %v\n", j.bin, end.err))
		s.ended(in, k.pkg)
		s.failed = append(s.failed, k)
		s.fail++ // counted, as no failing test of it was
		failed = true
	}
	verdict := "ok  "
	if failed {
		verdict = "FAIL"
	}
	fmt.Fprintf(s.out, "%s\t%s\t%.3fs\n", verdict, j.pkg, end.elapsed.Seconds())
}
