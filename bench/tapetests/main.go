// Command tapetests measures jukebox test over many small tapes (issue 34):
// N tapes (default 1,000) of a small agent, each one model call recorded
// against the scripted model, replayed by `jukebox test -j CPUs DIR`,
// against the peer measured in the same run: the same tapes replayed one
// after another by `jukebox replay --strict`, divided by the CPUs.
// Targets: jukebox test under 2x that, with at least 0.8x the CPUs busy
// (the CPU time of jukebox test and everything it ran, over its wall time
// times the CPUs).
//
//	go -C bench run ./tapetests [-n 1000] [-j CPUs] [-jukebox BIN]
//
// The agent is this program (argv "agent"): it asks $OPENAI_BASE_URL one
// question and prints the answer, so that what is measured is jukebox's.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/internal/llmsim"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "agent" {
		os.Exit(agent(os.Args[2]))
	}
	n := flag.Int("n", 1000, "tapes")
	jobs := flag.Int("j", runtime.NumCPU(), "jukebox test -j (and the CPUs the peer is divided by)")
	bin := flag.String("jukebox", "", "jukebox binary (default: built from this work tree)")
	flag.Parse()
	if err := run(*n, *jobs, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "tapetests:", err)
		os.Exit(1)
	}
}

// agent asks the model prompt and prints the answer.
func agent(prompt string) int {
	body, _ := json.Marshal(map[string]any{"model": "demo-small", "messages": []map[string]string{{"role": "user", "content": prompt}}})
	resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	var v struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || len(v.Choices) == 0 {
		fmt.Fprintln(os.Stderr, resp.Status, err)
		return 1
	}
	fmt.Println(v.Choices[0].Message.Content)
	return 0
}

func run(n, jobs int, bin string) error {
	dir, err := os.MkdirTemp("", "tapetests")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		if bin, err = benchutil.BuildJukebox(filepath.Join(dir, "bin")); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	sim, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		return err
	}
	tapes := filepath.Join(dir, "tapes")
	if err := os.Mkdir(tapes, 0o755); err != nil {
		return err
	}
	// The first tape is recorded; the others are copies of it under
	// their own names (small tapes alike, replayed each on its own).
	first := filepath.Join(tapes, "t0000.jbx")
	rec := exec.Command(bin, "record", "-o", first, "--upstream", "openai="+sim.OpenAIBaseURL(), "--", self, "agent", "hello")
	if out, err := rec.CombinedOutput(); err != nil {
		return fmt.Errorf("record: %v\n%s", err, out)
	}
	sim.Close()
	data, err := os.ReadFile(first)
	if err != nil {
		return err
	}
	names := []string{first}
	for i := 1; i < n; i++ {
		p := filepath.Join(tapes, fmt.Sprintf("t%04d.jbx", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		names = append(names, p)
	}
	fmt.Printf("%d tapes of %d bytes, one model call each; %d CPUs, -j %d; load before: %s\n", n, len(data), runtime.NumCPU(), jobs, load())

	// The peer: one after another.
	start := time.Now()
	var seqCPU time.Duration
	for _, p := range names {
		c := exec.Command(bin, "replay", "--strict", p)
		c.Stdout = io.Discard
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("replay %s: %v\n%s", p, err, stderr.Bytes())
		}
		seqCPU += cpu(c.ProcessState)
	}
	seq := time.Since(start)

	start = time.Now()
	c := exec.Command(bin, "test", "-j", fmt.Sprint(jobs), "--json", tapes)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	par := time.Since(start)
	var res struct{ Passed, Failed int }
	if jerr := json.Unmarshal(stdout.Bytes(), &res); err != nil || jerr != nil || res.Passed != n {
		return fmt.Errorf("jukebox test: %v %v, %d passed, %d failed\n%s", err, jerr, res.Passed, res.Failed, tail(stderr.String()))
	}
	parCPU := cpu(c.ProcessState)

	ideal := seq / time.Duration(jobs)
	busy := float64(parCPU) / (float64(par) * float64(jobs))
	fmt.Printf("one after another (jukebox replay --strict): %.1f s wall, %.1f s CPU; / %d CPUs: %.1f s\n", seq.Seconds(), seqCPU.Seconds(), jobs, ideal.Seconds())
	fmt.Printf("jukebox test -j %d: %.1f s wall, %.1f s CPU, %d passed\n", jobs, par.Seconds(), parCPU.Seconds(), res.Passed)
	fmt.Printf("ratio jukebox test / (one after another / CPUs): %.2fx (target < 2x)\n", float64(par)/float64(ideal))
	share := float64(seqCPU) / float64(seq)
	fmt.Printf("CPUs busy: %.2fx of %d (target >= 0.8x); the peer, one at a time, had %.2fx of one CPU (the share other work left)\n",
		busy, jobs, share)
	fmt.Printf("CPUs busy over what the peer's share allows (%d x %.2f): %.2fx\n", jobs, share, busy/share)
	fmt.Printf("load after: %s\n", load())
	return nil
}

// cpu is the user and system time of a process and the children it
// waited for.
func cpu(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
