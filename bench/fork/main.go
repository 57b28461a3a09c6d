// Command fork measures resume latency: from the start of a fork whose fork
// frame follows a 50-step prefix, to the first live request leaving the
// proxy, less the agent's own start-up. Target: under 50 ms.
//
//	go -C bench run ./fork [-runs 10]
//
// The agent is this program re-executed: it sends the 51 requests of a
// synthetic run that resends its whole history each step (internal/tapegen)
// to OPENAI_BASE_URL and reads every streamed answer, printing the moment
// of its first request. The parent is recorded against the scripted model;
// each fork drops the needle on the 51st call with another model, and the
// upstream notes when that first live call arrives.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

const agentEnv = "JUKEBOX_BENCH_FORK_AGENT"

var spec = tapegen.Spec{Steps: 51, Chunks: 8, Model: "gpt-4o-mini"}

func main() {
	if os.Getenv(agentEnv) != "" {
		agent()
		return
	}
	runs := flag.Int("runs", 10, "forks to time")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the forks to this file")
	flag.Parse()
	if *prof != "" {
		stop, err := benchutil.StartProfile(*prof)
		if err != nil {
			log.Fatal(err)
		}
		defer stop()
	}
	if err := bench(*runs); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

// agent sends the run's requests in order and prints when it started.
func agent() {
	base := os.Getenv("OPENAI_BASE_URL")
	fmt.Printf("first-request %d\n", time.Now().UnixNano())
	for _, in := range tapegen.Interactions(spec) {
		resp, err := http.Post(base+"/chat/completions", "application/json", bytes.NewReader(in.Request))
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// upstream is the scripted model, noting when the first request arrives.
type upstream struct {
	h     http.Handler
	mu    sync.Mutex
	first time.Time
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	if u.first.IsZero() {
		u.first = time.Now()
	}
	u.mu.Unlock()
	u.h.ServeHTTP(w, r)
}

func (u *upstream) reset() time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.first
	u.first = time.Time{}
	return t
}

func bench(runs int) error {
	dir, err := os.MkdirTemp("", "jukebox-bench-fork")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	up := &upstream{h: llmsim.New(nil)}
	srv := httptest.NewServer(up)
	defer srv.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	argv := []string{self}
	env := append(os.Environ(), agentEnv+"=1")
	parent := filepath.Join(dir, "parent.jbx")
	ups := map[string]string{"openai": srv.URL + "/v1"}
	if _, err := engine.Record(context.Background(), engine.RecordOptions{RunOptions: engine.RunOptions{Argv: argv, Env: env,
		Stdout: io.Discard, Stderr: os.Stderr}, Tape: parent, Upstreams: ups}); err != nil {
		return err
	}
	at, err := lastRequest(parent)
	if err != nil {
		return err
	}
	var resume, startup []time.Duration
	for i := range runs {
		up.reset()
		var out bytes.Buffer
		t0 := time.Now()
		res, err := engine.Fork(context.Background(), engine.ForkOptions{RunOptions: engine.RunOptions{Argv: argv, Env: env,
			Stdout: &out, Stderr: os.Stderr}, Parent: parent, Frame: at, Overrides: engine.Overrides{Model: "gpt-4o"},
			Tape: filepath.Join(dir, fmt.Sprintf("fork-%d.jbx", i)), Upstreams: ups})
		if err != nil {
			return err
		}
		if res.Divergence != nil {
			return fmt.Errorf("fork diverged: %v", res.Divergence)
		}
		live := up.reset()
		first, err := firstRequest(out.String())
		if err != nil || live.IsZero() {
			return fmt.Errorf("no timings (agent printed %q): %v", out.String(), err)
		}
		startup = append(startup, first.Sub(t0))
		resume = append(resume, live.Sub(first))
	}
	report(runs, resume, startup)
	return nil
}

func report(runs int, resume, startup []time.Duration) {
	med := benchutil.Median(resume)
	verdict := "PASS"
	if med >= 50*time.Millisecond {
		verdict = "FAIL"
	}
	fmt.Printf("fork at the 51st model call, 50-step prefix replayed from the parent (%d forks)\n", runs)
	fmt.Printf("agent start-up (not counted)      median %8.2f ms\n", benchutil.MS(benchutil.Median(startup)))
	fmt.Printf("resume: prefix replay to the first live request upstream\n")
	fmt.Printf("                                  median %8.2f ms  p90 %8.2f ms  (target < 50 ms)  %s\n",
		benchutil.MS(med), benchutil.MS(benchutil.Quantile(resume, 0.9)), verdict)
}

func firstRequest(out string) (time.Time, error) {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "first-request "); ok {
			ns, err := strconv.ParseInt(v, 10, 64)
			return time.Unix(0, ns), err
		}
	}
	return time.Time{}, fmt.Errorf("the agent printed no first-request line")
}

// lastRequest is the frame of the parent's last model call.
func lastRequest(path string) (uint64, error) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	var last uint64
	for f, err := range t.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			return 0, err
		}
		last = f.Seq
	}
	return last, nil
}
