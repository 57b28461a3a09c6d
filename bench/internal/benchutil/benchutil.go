// Package benchutil holds what the bench/ programs share: CPU profiles,
// quantiles of timings, millisecond figures and a jukebox built from the
// work tree.
package benchutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// StartProfile writes a CPU profile to path until the returned stop is called.
func StartProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// Quantile returns the q-quantile (0 to 1) of ds, leaving ds as it is.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// Median is the 0.5-quantile of ds.
func Median(ds []time.Duration) time.Duration { return Quantile(ds, 0.5) }

// MS is d in milliseconds.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BuildJukebox builds jukebox from this work tree into dir, with
// jukebox-booth beside it as `go install ./cmd/...` puts it, and returns
// jukebox's path. With JUKEBOX_BIN_DIR set, as the tests take it, the
// binaries there are copied instead (a bench run as another user, say,
// who has no Go build cache).
func BuildJukebox(dir string) (string, error) {
	if from := os.Getenv("JUKEBOX_BIN_DIR"); from != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for _, name := range []string{"jukebox", "jukebox-booth"} {
			b, err := os.ReadFile(filepath.Join(from, name))
			if err != nil {
				return "", fmt.Errorf("JUKEBOX_BIN_DIR: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
				return "", err
			}
		}
		return filepath.Join(dir, "jukebox"), nil
	}
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/jukebox-os/jukebox").Output()
	if err != nil {
		return "", fmt.Errorf("go list: %w", err)
	}
	bin := filepath.Join(dir, "jukebox")
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/...") // jukebox-booth beside it, as installed
	build.Env = append(os.Environ(), "CGO_ENABLED=0")                                       // as README installs it
	build.Dir = strings.TrimSpace(string(mod))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v %s", err, out)
	}
	return bin, nil
}
