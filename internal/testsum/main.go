// testsum reads `go test -json` on stdin (or from each file named, read
// together as they are written: .ci/test runs several go test at once,
// each into a pipe of its own) and prints what a person needs
// from it: each package's result line as it comes, then the whole output
// of every failing test (and of a package that failed outside its tests),
// one line per group of skipped tests (package and reason) and the
// slowest tests. It exits 1 when anything failed. A test still running
// when its package ended (the test binary's -timeout, a crash) counts as
// failed, shown with what it printed: the panic and every goroutine's
// stack, which go test attributes to it.
//
//	go test -json ./... | go run ./internal/testsum
//	go run ./internal/testsum a.fifo b.fifo
//
// With -run it runs test binaries itself (go test -c built them, each
// under test2json, at most -j at once, in the order the job file gives)
// and reads their events as go test -json would give them, printing
// each package's result line when its binary ends. .ci/test does so:
// the binaries it keeps from one run to the next, which go test links
// anew every time (about a minute of CPU a run), are linked again only
// when what they are built from changed.
//
//	go run ./internal/testsum -run JOBS -j 3 -test2json BIN/test2json -timeout 16m -- -test.timeout=15m
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// key is a test (or, test "", a package) of one input: the same package
// may run in two of them (the cloud drivers' build tags).
type key struct {
	in        int
	pkg, test string
}

// summary is what is kept while the stream is read.
type summary struct {
	out        io.Writer
	output     map[key][]string // each test's and package's own lines
	failed     []key            // tests and packages, in the order they failed
	running    []key            // tests started and not yet ended, in start order
	skipped    []key
	elapsed    map[key]float64 // top-level tests only
	pass, fail int
	buildFail  bool
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == execTestArg {
		err := execTest(os.Args[2:])
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(127)
	}
	s := &summary{out: os.Stdout, output: map[key][]string{}, elapsed: map[key]float64{}}
	jobsFile := flag.String("run", "", "run the test binaries this file names (a line each: import path, folder, binary, flags; tab-separated) instead of reading go test -json")
	n := flag.Int("j", 2, "with -run: test binaries run at once")
	t2j := flag.String("test2json", "test2json", "with -run: the test2json program (go build -o DIR/ cmd/test2json)")
	timeout := flag.Duration("timeout", 0, "with -run: kill a test binary, and what it started, this long after it started (go test kills one a minute past its -test.timeout); 0 for never")
	waitDelay := flag.Duration("waitdelay", time.Minute, "with -run: how long a test binary's output is read after it exited (a process it left behind may hold it open)")
	timesFile := flag.String("times", "", "with -run: run the jobs longest first by the times this file kept from the run before (new jobs first), and keep this run's there")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: testsum [FILE...]\n       testsum -run JOBS [-j N] [-test2json PATH] [-times FILE] [-- TESTFLAG...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	if *jobsFile != "" {
		var jobs []job
		times := map[string]float64{}
		jobs, err = readJobs(*jobsFile)
		if err == nil && *timesFile != "" {
			// A cache: one that cannot be read orders nothing, and is
			// written again at the end.
			if t, terr := readTimes(*timesFile); terr != nil {
				fmt.Fprintln(os.Stderr, "testsum: the jobs run in the file's order:", terr)
			} else {
				times = t
			}
		}
		if err == nil {
			jobs = longestFirst(jobs, times)
			// An interrupt stops the jobs, which run in process groups of
			// their own that the terminal's Ctrl-C does not reach.
			stop, cancel := signal.NotifyContext(context.Background(), stopSignals...)
			defer cancel()
			self, _ := os.Executable()
			took := s.run(jobs, runner{n: *n, t2j: *t2j, flags: flag.Args(), timeout: *timeout, waitDelay: *waitDelay, stop: stop, self: self})
			if *timesFile != "" && stop.Err() == nil {
				// Kept for the next run's order: a failure to keep them fails nothing.
				if werr := writeTimes(*timesFile, jobs, took); werr != nil {
					fmt.Fprintln(os.Stderr, "testsum: keeping the jobs' times:", werr)
				}
			}
		}
	} else {
		err = s.readFiles(flag.Args())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	s.report()
	if len(s.failed) > 0 || s.buildFail {
		os.Exit(1)
	}
}

// readFiles reads the files named (fifos, opened once their writers open
// them), or standard input when none is.
func (s *summary) readFiles(names []string) error {
	if len(names) == 0 {
		return s.read([]io.Reader{os.Stdin})
	}
	var inputs []io.Reader
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	return s.read(inputs)
}

// read reads every input to its end, a line at a time, each line whole
// whichever input it comes from.
func (s *summary) read(inputs []io.Reader) error {
	lines, errs := make(chan line), make(chan error, len(inputs))
	for i, r := range inputs {
		go func() { errs <- scanLines(i, r, lines) }()
	}
	var first error
	for open := len(inputs); open > 0; {
		select {
		case l := <-lines:
			s.line(l)
		case err := <-errs:
			open--
			first = cmp.Or(first, err)
		}
	}
	return first
}

// scanLines sends r's lines, each whole, to lines as input in's.
func scanLines(in int, r io.Reader, lines chan<- line) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines <- line{in, slices.Clone(sc.Bytes())}
	}
	return sc.Err()
}

// line is a line of input in: an event, or text passed on.
type line struct {
	in   int
	text []byte
}

func (s *summary) line(l line) {
	var e event
	if err := json.Unmarshal(l.text, &e); err != nil || e.Action == "" {
		fmt.Fprintln(s.out, string(l.text)) // not JSON: pass it on
		return
	}
	s.add(l.in, e)
}

func (s *summary) add(in int, e event) {
	k := key{in, short(e.Package), e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "build-fail":
		s.buildFail = true
	case "output":
		if e.Test == "" && isResultLine(e.Output) {
			fmt.Fprint(s.out, e.Output)
			return
		}
		if e.Test == "" && strings.HasPrefix(e.Output, "?   \t") {
			return
		}
		s.output[k] = append(s.output[k], e.Output)
	case "run":
		s.running = append(s.running, k)
	case "pass", "fail", "skip":
		s.done(k, e)
	}
}

// ended is a package's end: its tests still running never will, and
// count as failed (a timeout's panic names them and holds the stacks).
func (s *summary) ended(in int, pkg string) {
	var still []key
	for _, k := range s.running {
		if k.in != in || k.pkg != pkg {
			still = append(still, k)
			continue
		}
		s.failed = append(s.failed, k)
		s.fail++
		s.output[k] = append([]string{"(still running when the package ended: a timeout or a crash)\n"}, s.output[k]...)
	}
	s.running = still
}

// testResult is the line a test's end prints ("--- PASS: TestX (1.23s)").
var testResult = regexp.MustCompile(`^\s*--- (?:PASS|FAIL|SKIP): \S+ \(([0-9.]+)s\)`)

// elapsedOf is a test's time as its output's last result line gives it:
// test2json run on a test binary (testsum -run) leaves Elapsed out of
// its events, where go test -json sets it.
func elapsedOf(lines []string) float64 {
	for _, l := range slices.Backward(lines) {
		if m := testResult.FindStringSubmatch(l); m != nil {
			f, _ := strconv.ParseFloat(m[1], 64)
			return f
		}
	}
	return 0
}

// isResultLine reports whether a package's output line is its one-line
// result ("ok  pkg 1.2s", "FAIL pkg 3.4s"); "?   pkg [no test files]" is
// left out.
func isResultLine(line string) bool {
	return strings.HasPrefix(line, "ok  \t") || strings.HasPrefix(line, "FAIL\t")
}

func (s *summary) done(k key, e event) {
	if k.test == "" {
		s.ended(k.in, k.pkg)
	}
	s.running = slices.DeleteFunc(s.running, func(r key) bool { return r == k })
	if k.test != "" && !strings.Contains(k.test, "/") {
		s.elapsed[k] = cmp.Or(e.Elapsed, elapsedOf(s.output[k]))
	}
	switch {
	case e.Action == "fail":
		s.failed = append(s.failed, k)
		if k.test != "" {
			s.fail++
		}
	case e.Action == "skip" && k.test != "":
		s.skipped = append(s.skipped, k)
	case e.Action == "pass" && k.test != "":
		s.pass++
	}
	if e.Action != "fail" && e.Action != "skip" {
		delete(s.output, k) // a passing test's output is not needed
	}
}

func (s *summary) report() {
	if len(s.failed) > 0 {
		fmt.Fprintf(s.out, "\n=== failed\n")
		for _, k := range s.failed {
			if lines := s.output[k]; said(lines) {
				fmt.Fprintf(s.out, "--- %s %s\n", k.pkg, cmp.Or(k.test, "(package)"))
				for _, l := range lines {
					if !strings.HasPrefix(l, "=== ") {
						fmt.Fprint(s.out, l)
					}
				}
			}
		}
	}
	if groups := s.skipGroups(); len(groups) > 0 {
		fmt.Fprintf(s.out, "\n=== skipped\n")
		for _, g := range groups {
			fmt.Fprintln(s.out, g)
		}
	}
	fmt.Fprintf(s.out, "\n%d passed, %d failed, %d skipped; slowest: %s\n", s.pass, s.fail, len(s.skipped), s.slowest(5))
}

// said reports whether lines hold more than go test's own markers
// ("=== RUN", "--- FAIL", a package's closing "FAIL" and exit status),
// which the result lines already give.
func said(lines []string) bool {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && l != "FAIL" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "exit status ") {
			return true
		}
	}
	return false
}

// location is the "file_test.go:12: " that t.Skip puts before its reason.
var location = regexp.MustCompile(`^\s*\S+\.go:\d+: `)

// reason is why a test skipped: its last line of its own output.
func (s *summary) reason(k key) string {
	why := "(no reason given)"
	for _, l := range s.output[k] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		why = location.ReplaceAllString(l, "")
	}
	return why
}

// skipGroups is one line per package and reason: the tests, then why.
func (s *summary) skipGroups() []string {
	type group struct {
		pkg, why string
		tests    []string
	}
	var groups []*group
	for _, k := range s.skipped {
		why := s.reason(k)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.pkg == k.pkg && g.why == why })
		if i < 0 {
			groups = append(groups, &group{pkg: k.pkg, why: why})
			i = len(groups) - 1
		}
		groups[i].tests = append(groups[i].tests, k.test)
	}
	var lines []string
	for _, g := range groups {
		tests := g.tests
		if len(tests) > 3 {
			tests = append(tests[:3:3], fmt.Sprintf("and %d more", len(g.tests)-3))
		}
		lines = append(lines, fmt.Sprintf("SKIP %s %s: %s", g.pkg, strings.Join(tests, ", "), g.why))
	}
	return lines
}

func (s *summary) slowest(n int) string {
	keys := make([]key, 0, len(s.elapsed))
	for k := range s.elapsed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Compare(s.elapsed[b], s.elapsed[a]) })
	var parts []string
	for _, k := range keys[:min(n, len(keys))] {
		d := time.Duration(s.elapsed[k] * float64(time.Second)).Round(100 * time.Millisecond)
		parts = append(parts, fmt.Sprintf("%s %s %s", k.pkg, k.test, d))
	}
	return strings.Join(parts, ", ")
}

// short is a package path without the module's prefix.
func short(pkg string) string {
	_, rest, ok := strings.Cut(pkg, "/jukebox/")
	if !ok {
		return pkg
	}
	return rest
}
