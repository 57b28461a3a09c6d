package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	elapsed time.Duration
	err     error
}

// run runs jobs, at most n at once in the order given, each test binary
// under test2json (the program at t2j) with flags before its own, and
// reads their events as read does. A job whose process fails without a
// failing event (it did not start, or test2json could not run it) fails
// its package.
func (s *summary) run(jobs []job, n int, t2j string, flags []string) {
	lines := make(chan line)
	ends := make(chan struct {
		in  int
		end jobEnd
	})
	slots := make(chan struct{}, max(n, 1))
	go func() {
		for i, j := range jobs {
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				end := runJob(i, j, t2j, flags, lines)
				ends <- struct {
					in  int
					end jobEnd
				}{i, end}
			}()
		}
	}()
	for open := len(jobs); open > 0; {
		select {
		case l := <-lines:
			s.line(l)
		case e := <-ends:
			open--
			s.jobEnded(e.in, jobs[e.in], e.end)
		}
	}
}

// runJob runs one test binary, its events to lines, and says how it ended
// once every line is sent.
func runJob(in int, j job, t2j string, flags []string, lines chan<- line) jobEnd {
	start := time.Now()
	cmd := exec.Command(t2j, append([]string{"-p", j.pkg, j.bin, "-test.v=test2json"}, append(slices.Clone(flags), j.args...)...)...)
	cmd.Dir = j.dir
	cmd.Env = append(os.Environ(), "PWD="+j.dir) // as go test runs it
	// test2json's own errors; the binary's output goes into the events.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return jobEnd{err: err}
	}
	if err := cmd.Start(); err != nil {
		return jobEnd{err: err}
	}
	scanErr := scanLines(in, out, lines)
	if scanErr != nil {
		io.Copy(io.Discard, out) // let the process end
	}
	err = errors.Join(scanErr, cmd.Wait())
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return jobEnd{elapsed: time.Since(start), err: err}
}

// jobEnded prints a job's result line and fails its package when the
// process failed and no event said so.
func (s *summary) jobEnded(in int, j job, end jobEnd) {
	k := key{in, short(j.pkg), ""}
	failed := slices.Contains(s.failed, k)
	if end.err != nil && !failed {
		s.output[k] = append(s.output[k], fmt.Sprintf("%s: %v\n", j.bin, end.err))
		s.ended(in, k.pkg)
		s.failed = append(s.failed, k)
		failed = true
	}
	verdict := "ok  "
	if failed {
		verdict = "FAIL"
	}
	fmt.Fprintf(s.out, "%s\t%s\t%.3fs\n", verdict, j.pkg, end.elapsed.Seconds())
}
