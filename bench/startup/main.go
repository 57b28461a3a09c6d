// Command startup measures what a user waits for before jukebox does
// anything, against the floor Go itself sets: the start-up of `jukebox
// --version` against a Go hello-world's (target: within 4x), both built
// here by the same toolchain and run interleaved in the same run, and the
// size of the default `go build ./cmd/jukebox` binary (target: at most 60
// MiB). It also sums the package initialisation GODEBUG=inittrace=1
// reports and names the slowest packages, where start-up goes, and the
// start-up of `jukebox ls EMPTY-FOLDER`, a command the CLI parser builds a
// model of (the bare --version is answered before it).
//
// The start-up target is held by the binary README's install commands
// make (CGO_ENABLED=0 go build or go install, no other flag): static, like
// the hello-world. A plain `go build` where a C compiler is present links
// libc through the dynamic loader (net and os/user use cgo then), about a
// seventh more start-up: it is reported beside, with README's release
// build (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"). The size target is
// held by the plain `go build` binary, the larger of the first two.
//
//	go -C bench run ./startup [-runs 41] [-tags jukebox_gcs,jukebox_azure] [-top 10] [-release=false]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
)

const (
	maxRatio = 4.0
	maxMiB   = 60.0
)

func main() {
	runs := flag.Int("runs", 41, "runs of each program (median and minimum reported)")
	tags := flag.String("tags", "", "build tags for the jukebox binary (the targets are for none)")
	top := flag.Int("top", 10, "slowest package initialisations to name")
	release := flag.Bool("release", true, "also measure the release build (static, -trimpath, -s -w)")
	flag.Parse()
	if err := run(*runs, *tags, *top, *release); err != nil {
		fmt.Fprintln(os.Stderr, "bench/startup:", err)
		os.Exit(1)
	}
}

func run(runs int, tags string, top int, release bool) error {
	dir, err := os.MkdirTemp("", "startup-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	hello, err := buildHello(dir)
	if err != nil {
		return err
	}
	jb, err := buildJukebox(dir, tags, plainBuild)
	if err != nil {
		return err
	}
	installed, err := buildJukebox(dir, tags, installBuild)
	if err != nil {
		return err
	}
	var rel string
	if release {
		if rel, err = buildJukebox(dir, tags, releaseBuild); err != nil {
			return err
		}
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average: %s", load)
	}
	if err := versus(runs, hello, "installed --version", installed, true); err != nil {
		return err
	}
	if err := versus(runs, hello, "go build --version", jb, false); err != nil {
		return err
	}
	if release {
		if err := versus(runs, hello, "release --version", rel, false); err != nil {
			return err
		}
	}
	// A command the CLI parser builds its model of (the bare --version
	// is answered before): reported beside, no target.
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		return err
	}
	_, ls, err := interleave(max(runs/2, 1), []string{hello}, []string{installed, "ls", empty})
	if err != nil {
		return err
	}
	report("jukebox ls EMPTY", ls, max(runs/2, 1))
	st, err := os.Stat(jb)
	if err != nil {
		return err
	}
	mib := float64(st.Size()) / (1 << 20)
	fmt.Printf("binary size: %d bytes = %.1f MiB  (target <= %.0f MiB, -tags %q)  %s\n", st.Size(), mib, maxMiB, tags, verdict(mib <= maxMiB))
	return initTrace(installed, top)
}

// versus runs bin --version and the hello-world interleaved, and reports
// both and their ratios under name; target says whether the ratio is the
// one the target holds (else it is reported only).
func versus(runs int, hello, name, bin string, target bool) error {
	h, j, err := interleave(runs, []string{hello}, []string{bin, "--version"})
	if err != nil {
		return err
	}
	report("hello-world", h, runs)
	report(name, j, runs)
	ratio := float64(benchutil.Median(j.wall)) / float64(benchutil.Median(h.wall))
	held := fmt.Sprintf("(target <= %.0fx)  %s", maxRatio, verdict(ratio <= maxRatio))
	if !target {
		held = "(reported)"
	}
	fmt.Printf("ratio of wall medians = %.2fx, of wall minima = %.2fx, of CPU medians = %.2fx  %s\n",
		ratio, float64(slices.Min(j.wall))/float64(slices.Min(h.wall)),
		float64(benchutil.Median(j.cpu))/float64(benchutil.Median(h.cpu)), held)
	return nil
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// buildHello builds Go's hello-world (fmt.Println) into dir.
func buildHello(dir string) (string, error) {
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build hello.go: %v %s", err, out)
	}
	return bin, nil
}

// The builds measured: a plain `go build` (cgo as the machine has it),
// README's install (CGO_ENABLED=0) and README's release build.
const (
	plainBuild = iota
	installBuild
	releaseBuild
)

// buildJukebox builds ./cmd/jukebox of this work tree with tags, as build
// says: with no flag but the tags, the same with CGO_ENABLED=0, or as
// README's release build does.
func buildJukebox(dir, tags string, build int) (string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/jukebox-os/jukebox").Output()
	if err != nil {
		return "", fmt.Errorf("go list: %w", err)
	}
	bin, args, env := filepath.Join(dir, "jukebox"), []string{"build", "-tags=" + tags}, append(os.Environ(), "GOFLAGS=")
	switch build {
	case installBuild:
		bin, env = filepath.Join(dir, "jukebox-installed"), append(env, "CGO_ENABLED=0")
	case releaseBuild:
		bin, args, env = filepath.Join(dir, "jukebox-release"), append(args, "-trimpath", "-ldflags=-s -w"), append(env, "CGO_ENABLED=0")
	}
	cmd := exec.Command("go", append(args, "-o", bin, "./cmd/jukebox")...)
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/jukebox: %v %s", err, out)
	}
	return bin, nil
}

// times are the wall-clock and CPU (user and system) times of runs.
type times struct{ wall, cpu []time.Duration }

func report(name string, t times, runs int) {
	fmt.Printf("%-19s wall median %7.2f ms  min %7.2f ms   CPU median %7.2f ms  (%d runs)\n", name,
		benchutil.MS(benchutil.Median(t.wall)), benchutil.MS(slices.Min(t.wall)), benchutil.MS(benchutil.Median(t.cpu)), runs)
}

// interleave runs a and b alternately, runs times each, after one
// unmeasured run of each (the page cache), and returns their times.
func interleave(runs int, a, b []string) (ta, tb times, err error) {
	for i := -1; i < runs; i++ {
		for _, c := range []struct {
			argv []string
			t    *times
		}{{a, &ta}, {b, &tb}} {
			wall, cpu, err := timeRun(c.argv)
			if err != nil {
				return ta, tb, err
			}
			if i >= 0 {
				c.t.wall, c.t.cpu = append(c.t.wall, wall), append(c.t.cpu, cpu)
			}
		}
	}
	return ta, tb, nil
}

func timeRun(argv []string) (wall, cpu time.Duration, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("%s: %v %s", strings.Join(argv, " "), err, out)
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// initTrace prints how many packages jukebox initialises, their summed
// init time and bytes (GODEBUG=inittrace=1, one run), and the slowest.
func initTrace(bin string, top int) error {
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("GODEBUG=inittrace=1 %s --version: %v %s", bin, err, stderr.Bytes())
	}
	type pkg struct {
		name      string
		ms, bytes float64
	}
	var pkgs []pkg
	var ms, by float64
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" {
			continue
		}
		c, _ := strconv.ParseFloat(f[4], 64)
		b, _ := strconv.ParseFloat(f[7], 64)
		pkgs = append(pkgs, pkg{f[1], c, b})
		ms, by = ms+c, by+b
	}
	fmt.Printf("package init: %d packages, %.1f ms, %.0f KiB (one run of --version)\n", len(pkgs), ms, by/1024)
	slices.SortFunc(pkgs, func(a, b pkg) int { return int((b.ms - a.ms) * 1e6) })
	for _, p := range pkgs[:min(top, len(pkgs))] {
		fmt.Printf("  %6.2f ms %7.0f KiB  %s\n", p.ms, p.bytes/1024, p.name)
	}
	return nil
}
