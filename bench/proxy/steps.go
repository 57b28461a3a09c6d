package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/internal/tapegen"
)

// stepsSpec is the realistic run: 50 streamed steps of 72 chunks, the
// whole conversation resent every step (bodies grow to about 40 KB).
var stepsSpec = tapegen.Spec{Steps: 50, Chunks: 72, Model: "gpt-4o-mini"}

// stepHeader names the step whose answer the upstream sends.
const stepHeader = "X-Bench-Step"

// stepsBench records the 50-step run rounds times, each call made
// directly and through the proxy alternately, and prints the per-call
// overhead and the ratio to the upstream alone.
// With wait, the upstream takes that long before it answers, as a real
// model does before its first token: what recording does beside the call
// (the request's frame) is then out of the agent's wait.
func stepsBench(p params, rounds int, syncs []string, wait time.Duration) error {
	ins := tapegen.Interactions(stepsSpec)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if wait > 0 {
			time.Sleep(wait)
		}
		i, err := strconv.Atoi(r.Header.Get(stepHeader))
		if err != nil || i < 0 || i >= len(ins) {
			http.Error(w, "no step", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(ins[i].Response)
	}))
	defer srv.Close()
	p.Steps, p.Rounds = stepsSpec.Steps, rounds
	fmt.Printf("the 50-step streamed run (%d chunks an answer, history resent), %d rounds: %d calls a side, the upstream answering after %v\n",
		stepsSpec.Chunks, rounds, rounds*stepsSpec.Steps, wait)
	for _, name := range syncs {
		policy, ok := policies[name]
		if !ok {
			return fmt.Errorf("-sync %q: want step, never or frame", name)
		}
		s, _, err := record(srv.URL+"/v1", p, policy, "")
		if err != nil {
			return fmt.Errorf("sync=%s: %w", name, err)
		}
		d, x := medianD(s.StepsDirect), medianD(s.StepsProxy)
		fmt.Printf("sync=%-5s direct %.3f ms, proxy %.3f ms: +%.3f ms a call, %.2fx; target +%.1f ms: %s\n", name,
			benchutil.MS(d), benchutil.MS(x), benchutil.MS(x-d), float64(x)/float64(d), benchutil.MS(targetOverhead), verdict(x-d <= targetOverhead))
	}
	return nil
}

// stepsChild makes the run's calls, every body made unique by a last
// field so that no blob is shared between calls. The field goes at the
// end, as a client's new messages do: a body still begins with the
// history the previous one sent (a leading field would make every body
// differ from its first bytes, which no client's resent history does).
func (c *client) stepsChild(p params, direct, proxied string, s *samples) error {
	ins := tapegen.Interactions(stepsSpec)
	for r := range p.Rounds + 1 { // the first round warms up
		for i, in := range ins {
			order := []string{direct, proxied}
			if (r+i)%2 == 1 {
				order = []string{proxied, direct}
			}
			for _, base := range order {
				c.n++
				body := append(in.Request[:len(in.Request)-1:len(in.Request)-1], `,"bench":`+strconv.Itoa(c.n)+`}`...)
				d, err := c.step(base, i, body)
				if err != nil {
					return fmt.Errorf("%s step %d: %w", base, i, err)
				}
				if r == 0 {
					continue
				}
				if base == direct {
					s.StepsDirect = append(s.StepsDirect, int64(d))
				} else {
					s.StepsProxy = append(s.StepsProxy, int64(d))
				}
			}
		}
	}
	return nil
}

// step times one streamed call of step i, read to its end.
func (c *client) step(base string, i int, body []byte) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	h := tapegen.Header()
	h.Set(stepHeader, strconv.Itoa(i))
	req.Header = h
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}
