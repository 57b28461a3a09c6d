//go:build linux

// Command booth measures the Shadow Booth (Linux only, as the booth is) against the peer the issue names:
// Begin and Rollback on a 10,000-file workspace (target: under 20 ms each,
// whatever the size), Commit of 1,000 staged files against `cp -r` of
// the same files (target: within 2x), the copy fallback's copy of the
// 10,000-file workspace against `cp -r` of it (target: within 3x), and
// `jukebox record --booth -- true` against `jukebox record -- true`
// (target: within 1.5x), with a jukebox binary built once from this
// work tree. It prints medians and the ratios.
//
//	go -C bench run ./booth [-files 10000] [-commit 1000] [-runs 7] [-record-runs 21]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/sandbox"
)

func main() {
	files := flag.Int("files", 10000, "files in the workspace")
	commit := flag.Int("commit", 1000, "files staged for the commit benchmark")
	runs := flag.Int("runs", 7, "runs per measurement (median reported)")
	recordRuns := flag.Int("record-runs", 21, "runs of each jukebox record command (median reported)")
	flag.Parse()
	if err := run(*files, *commit, *runs, *recordRuns); err != nil {
		fmt.Fprintln(os.Stderr, "bench/booth:", err)
		os.Exit(1)
	}
}

func run(files, commit, runs, recordRuns int) error {
	root, err := os.MkdirTemp("", "booth-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "ws")
	if err := makeTree(ws, files); err != nil {
		return err
	}
	begin, rollback, err := beginRollback(ws, runs)
	if err != nil {
		return err
	}
	fmt.Printf("workspace: %d files\n", files)
	fmt.Printf("begin     median %8.3f ms  (target < 20 ms)\n", benchutil.MS(begin))
	fmt.Printf("rollback  median %8.3f ms  (target < 20 ms, 10 files staged)\n", benchutil.MS(rollback))
	booth, cp, err := commitVsCp(root, ws, commit, runs)
	if err != nil {
		return err
	}
	fmt.Printf("commit    median %8.3f ms  (%d files)\n", benchutil.MS(booth), commit)
	fmt.Printf("cp -r     median %8.3f ms  (same %d files)\n", benchutil.MS(cp), commit)
	fmt.Printf("ratio commit/cp = %.2fx  (target <= 2x)\n", float64(booth)/float64(cp))
	cr, err := copyVsCp(root, ws, runs)
	if err != nil {
		return err
	}
	fmt.Printf("copy fallback, %d files: exec of true median %8.3f ms  (%s)\n", files, benchutil.MS(cr.exec), cr.mode)
	fmt.Printf("  of which the copy     median %8.3f ms  (until the child starts)\n", benchutil.MS(cr.copy))
	fmt.Printf("  fold and remove       median %8.3f ms  (after the child ends)\n", benchutil.MS(cr.after))
	fmt.Printf("cp -r     median %8.3f ms  (same workspace)\n", benchutil.MS(cr.cp))
	fmt.Printf("ratio copy/cp = %.2fx  (target <= 3x); whole exec/cp = %.2fx\n", float64(cr.copy)/float64(cr.cp), float64(cr.exec)/float64(cr.cp))
	rec, err := recordVsPlain(root, ws, recordRuns, runs)
	if err != nil {
		return err
	}
	fmt.Printf("record -- true                       median %8.3f ms\n", benchutil.MS(rec.plain))
	fmt.Printf("record --booth -- true               median %8.3f ms  (%s; init %s)\n", benchutil.MS(rec.booth), rec.mode, rec.init)
	fmt.Printf("  the same, jukebox itself the init  median %8.3f ms  (no jukebox-booth beside it)\n", benchutil.MS(rec.self))
	fmt.Printf("record --booth --booth-mode copy     median %8.3f ms  (%d files, %d runs)\n", benchutil.MS(rec.copy), files, runs)
	fmt.Printf("ratio booth/plain = %.2fx  (target <= 1.5x); without jukebox-booth %.2fx; copy/plain = %.2fx\n",
		float64(rec.booth)/float64(rec.plain), float64(rec.self)/float64(rec.plain), float64(rec.copy)/float64(rec.plain))
	return nil
}

// makeTree writes n files of 1 KiB in directories of 100.
func makeTree(dir string, n int) error {
	buf := make([]byte, 1024)
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		buf[0] = byte(i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), buf, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func beginRollback(ws string, runs int) (time.Duration, time.Duration, error) {
	var begins, rollbacks []time.Duration
	ctx := context.Background()
	for r := 0; r < runs; r++ {
		t0 := time.Now()
		tx, err := sandbox.Begin(ws, sandbox.Options{})
		if err != nil {
			return 0, 0, err
		}
		begins = append(begins, time.Since(t0))
		for i := 0; i < 10; i++ {
			if err := tx.Files().WriteFile(fmt.Sprintf("d000/f%05d.txt", i), []byte("staged"), 0o644); err != nil {
				return 0, 0, err
			}
		}
		t0 = time.Now()
		if err := tx.Rollback(ctx); err != nil {
			return 0, 0, err
		}
		rollbacks = append(rollbacks, time.Since(t0))
	}
	return benchutil.Median(begins), benchutil.Median(rollbacks), nil
}

// commitVsCp stages n new 4 KiB files and commits them; the peer copies a
// tree of the same files with cp -r.
func commitVsCp(root, ws string, n, runs int) (time.Duration, time.Duration, error) {
	var booth, cp []time.Duration
	ctx := context.Background()
	buf := make([]byte, 4096)
	for r := 0; r < runs; r++ {
		tx, err := sandbox.Begin(ws, sandbox.Options{})
		if err != nil {
			return 0, 0, err
		}
		files := tx.Files()
		src := filepath.Join(root, fmt.Sprintf("src%d", r))
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("new%d/g%03d/f%05d.txt", r, i/100, i)
			buf[0] = byte(i)
			if i%100 == 0 {
				if err := files.MkdirAll(filepath.Dir(name), 0o755); err != nil {
					return 0, 0, err
				}
				os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755)
			}
			if err := files.WriteFile(name, buf, 0o644); err != nil {
				return 0, 0, err
			}
			os.WriteFile(filepath.Join(src, name), buf, 0o644)
		}
		// Each side starts with nothing dirty, so that the commit's syncfs
		// does not also pay for the bench's own writes.
		syscall.Sync()
		t0 := time.Now()
		if _, err := tx.Commit(ctx); err != nil {
			return 0, 0, err
		}
		booth = append(booth, time.Since(t0))
		syscall.Sync()
		t0 = time.Now()
		if out, err := exec.Command("cp", "-r", src, filepath.Join(root, fmt.Sprintf("dst%d", r))).CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("cp: %v %s", err, out)
		}
		cp = append(cp, time.Since(t0))
	}
	return benchutil.Median(booth), benchutil.Median(cp), nil
}

// copyRun is the copy fallback's timing: the whole Exec of `true`, the
// part before the child started (the copy) and after it ended (fold and
// removal of the copy), and the peer, cp -r of the workspace.
type copyRun struct {
	exec, copy, after, cp time.Duration
	mode                  sandbox.Mode
}

// copyVsCp runs `true` in the copy fallback over ws, the child writing
// the time it started to a file outside ws, and copies ws with cp -r.
// Each side starts with nothing dirty, as in commitVsCp.
func copyVsCp(root, ws string, runs int) (copyRun, error) {
	var cr copyRun
	var execs, copies, afters, cps []time.Duration
	ctx := context.Background()
	stamp := filepath.Join(root, "child-started")
	for r := 0; r < runs; r++ {
		tx, err := sandbox.Begin(ws, sandbox.Options{})
		if err != nil {
			return cr, err
		}
		syscall.Sync()
		t0 := time.Now()
		res, err := sandbox.Exec(ctx, tx, sandbox.ExecOptions{Args: []string{"sh", "-c", `date +%s%N > "$0"`, stamp},
			Mode: sandbox.ModeCopy, Notice: io.Discard, Stderr: os.Stderr})
		end := time.Now()
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("child exit %d", res.ExitCode)
		}
		if err != nil {
			return cr, err
		}
		cr.mode = res.Mode
		data, err := os.ReadFile(stamp)
		if err != nil {
			return cr, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return cr, err
		}
		started := time.Unix(0, ns)
		execs, copies, afters = append(execs, end.Sub(t0)), append(copies, started.Sub(t0)), append(afters, end.Sub(started))
		if err := tx.Rollback(ctx); err != nil {
			return cr, err
		}
		dst := filepath.Join(root, "cp-dst")
		syscall.Sync()
		t0 = time.Now()
		if out, err := exec.Command("cp", "-r", ws, dst).CombinedOutput(); err != nil {
			return cr, fmt.Errorf("cp: %v %s", err, out)
		}
		cps = append(cps, time.Since(t0))
		if err := os.RemoveAll(dst); err != nil {
			return cr, err
		}
	}
	cr.exec, cr.copy, cr.after, cr.cp = benchutil.Median(execs), benchutil.Median(copies), benchutil.Median(afters), benchutil.Median(cps)
	return cr, nil
}

// recordTimes are the medians of the jukebox record commands.
type recordTimes struct {
	plain, booth, self, copy time.Duration
	mode, init               string
}

// recordVsPlain builds jukebox from this work tree once (with
// jukebox-booth beside it), then runs `jukebox record -- true` and
// `jukebox record --booth --commit never -- true` in ws, interleaved,
// runs times each; for reference, the booth again from a copy of jukebox
// alone in a folder (so its init is jukebox itself), and the booth with
// --booth-mode copy copyRuns times (it copies the whole workspace).
func recordVsPlain(root, ws string, runs, copyRuns int) (recordTimes, error) {
	var rt recordTimes
	bin, err := benchutil.BuildJukebox(root)
	if err != nil {
		return rt, err
	}
	alone := filepath.Join(root, "alone", "jukebox")
	if err := os.MkdirAll(filepath.Dir(alone), 0o755); err != nil {
		return rt, err
	}
	if out, err := exec.Command("cp", bin, alone).CombinedOutput(); err != nil {
		return rt, fmt.Errorf("cp: %v %s", err, out)
	}
	doctor, err := exec.Command(bin, "doctor", "--json", "--dir", ws).Output()
	if err != nil {
		return rt, fmt.Errorf("jukebox doctor: %v", err)
	}
	var caps struct {
		Init string `json:"init"`
	}
	if err := json.Unmarshal(doctor, &caps); err != nil {
		return rt, fmt.Errorf("jukebox doctor --json: %v", err)
	}
	rt.init = caps.Init
	tapes := filepath.Join(root, "tapes")
	if err := os.Mkdir(tapes, 0o755); err != nil {
		return rt, err
	}
	booth := []string{"--booth", "--commit", "never"}
	kinds := [][]string{nil, booth, booth, {"--booth", "--booth-mode", "copy", "--commit", "never"}}
	times := make([][]time.Duration, len(kinds))
	for r := 0; r < runs+1; r++ { // the first round warms the caches and is dropped
		for k, flags := range kinds {
			if k == 3 && r > copyRuns {
				continue
			}
			args := append([]string{"record", "-o", filepath.Join(tapes, fmt.Sprintf("t%d-%d.jbx", r, k))}, flags...)
			run := bin
			if k == 2 {
				run = alone
			}
			cmd := exec.Command(run, append(args, "--", "true")...)
			cmd.Dir = ws
			var stderr strings.Builder
			cmd.Stderr = &stderr
			t0 := time.Now()
			err := cmd.Run()
			d := time.Since(t0)
			if err != nil {
				return rt, fmt.Errorf("jukebox %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			if k == 1 {
				rt.mode = boothMode(stderr.String())
			}
			if r > 0 {
				times[k] = append(times[k], d)
			}
		}
	}
	rt.plain, rt.booth, rt.self, rt.copy = benchutil.Median(times[0]), benchutil.Median(times[1]), benchutil.Median(times[2]), benchutil.Median(times[3])
	return rt, nil
}

// boothMode is the mode jukebox's booth notice names.
func boothMode(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(line, "jukebox: booth: "); ok {
			mode, _, _ := strings.Cut(rest, " ")
			return strings.TrimSuffix(mode, ",")
		}
	}
	return "?"
}
