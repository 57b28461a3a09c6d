// Command parquet measures `jukebox export parquet` (issue 35): 1,000
// generated tapes (internal/tapegen) exported to a folder, in MB of tape
// read per second, against the target (at least 50 MB/s on 2 cores) and
// against `jukebox verify` of the same tapes measured in the same run, the
// peer that reads every byte of them too. The runs interleave, after one
// unmeasured run of each; the medians are compared.
//
//	go -C bench run ./parquet [-tapes 1000] [-steps 20] [-runs 5] [-procs 2]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/internal/tapegen"
)

// targetMBps is the floor: MB of tape read per second.
const targetMBps = 50

func main() {
	tapes := flag.Int("tapes", 1000, "tapes to export")
	steps := flag.Int("steps", 20, "steps (model calls) per tape")
	runs := flag.Int("runs", 5, "measured runs of each command (median reported)")
	procs := flag.Int("procs", 2, "GOMAXPROCS of the commands measured (the target is on 2 cores)")
	flag.Parse()
	if err := run(*tapes, *steps, *runs, *procs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/parquet:", err)
		os.Exit(1)
	}
}

func run(n, steps, runs, procs int) error {
	dir, err := os.MkdirTemp("", "jukebox-bench-parquet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := benchutil.BuildJukebox(dir)
	if err != nil {
		return err
	}
	in := filepath.Join(dir, "tapes")
	if err := os.Mkdir(in, 0o755); err != nil {
		return err
	}
	var total int64
	var paths []string
	for i := range n {
		s := tapegen.Spec{Steps: steps + i%7, Chunks: 24, Model: []string{"gpt-4o-mini", "gpt-4o", "claude-sonnet-4-5"}[i%3],
			Tags: map[string]string{"team": []string{"search", "billing"}[i%2], "n": strconv.Itoa(i)}}
		s.ID[0], s.ID[1], s.ID[2] = byte(i), byte(i>>8), 0xbe
		p := filepath.Join(in, fmt.Sprintf("run-%04d.jbx", i))
		if err := tapegen.WriteFile(p, s); err != nil {
			return err
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		total += st.Size()
		paths = append(paths, p)
	}
	mb := float64(total) / 1e6
	fmt.Printf("%d tapes, %.1f MB, GOMAXPROCS=%d, %d CPUs here, load average %s\n", n, mb, procs, runtime.NumCPU(), loadavg())
	env := append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	out := filepath.Join(dir, "out")
	export := func() error {
		os.RemoveAll(out)
		c := exec.Command(bin, "export", "parquet", in, "-o", out)
		c.Env = env
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("export parquet: %v\n%s", err, b)
		}
		return nil
	}
	verify := func() error {
		c := exec.Command(bin, append([]string{"verify"}, paths...)...)
		c.Env = env
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("verify: %v\n%s", err, b)
		}
		return nil
	}
	var te, tv []time.Duration
	for i := range runs + 1 {
		for _, m := range []struct {
			f  func() error
			to *[]time.Duration
		}{{export, &te}, {verify, &tv}} {
			start := time.Now()
			if err := m.f(); err != nil {
				return err
			}
			if i > 0 { // the first run of each warms the page cache
				*m.to = append(*m.to, time.Since(start))
			}
		}
	}
	e, v := benchutil.Median(te), benchutil.Median(tv)
	rate := mb / e.Seconds()
	fmt.Printf("export parquet: median %.0f ms, %.1f MB/s of tape read (target >= %d MB/s: %.2fx of it)\n",
		benchutil.MS(e), rate, targetMBps, rate/targetMBps)
	fmt.Printf("verify (peer):  median %.0f ms, %.1f MB/s\n", benchutil.MS(v), mb/v.Seconds())
	fmt.Printf("export / verify time: %.2fx\n", e.Seconds()/v.Seconds())
	return nil
}

// loadavg is the 1-minute load average, "?" where it cannot be read.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
