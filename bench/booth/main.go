//go:build linux

// Command booth measures the Shadow Booth (Linux only, as the booth is) against the peer the issue names:
// Begin and Rollback on a 10,000-file workspace (target: under 20 ms each,
// whatever the size), and Commit of 1,000 staged files against `cp -r` of
// the same files (target: within 2x). It prints medians and the ratio.
//
//	go -C bench run ./booth [-files 10000] [-commit 1000] [-runs 7]
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/sandbox"
)

func main() {
	files := flag.Int("files", 10000, "files in the workspace")
	commit := flag.Int("commit", 1000, "files staged for the commit benchmark")
	runs := flag.Int("runs", 7, "runs per measurement (median reported)")
	flag.Parse()
	if err := run(*files, *commit, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/booth:", err)
		os.Exit(1)
	}
}

func run(files, commit, runs int) error {
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
			if err := tx.WriteFile(fmt.Sprintf("d000/f%05d.txt", i), []byte("staged"), 0o644); err != nil {
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
		src := filepath.Join(root, fmt.Sprintf("src%d", r))
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("new%d/g%03d/f%05d.txt", r, i/100, i)
			buf[0] = byte(i)
			if i%100 == 0 {
				if err := tx.MkdirAll(filepath.Dir(name), 0o755); err != nil {
					return 0, 0, err
				}
				os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755)
			}
			if err := tx.WriteFile(name, buf, 0o644); err != nil {
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
