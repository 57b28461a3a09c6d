package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/breaker"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// CostCmd prints a run's bill.
type CostCmd struct {
	Tape string `arg:"" type:"tape" help:"The tape (a file, or a tape in a store)."`
	By   string `enum:"model,agent,step" default:"model" help:"Group calls by model (with the rates used), agent (the X-Jukebox-Agent request header) or step."`
	JSON bool   `help:"Print the bill as JSON."`
}

// Run prints the bill: a row per group, then the total.
func (c *CostCmd) Run(env *Env) error {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return err
	}
	defer t.Close()
	if rec := t.Recovered(); rec != nil {
		// The bill is of what the tape kept: a partial one, said so.
		fmt.Fprintf(env.Stderr, "warning: %s: %s; the bill is of the calls up to there\n", c.Tape, recoveryText(rec))
	}
	bill, err := timeline.MakeBill(t, c.By)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Tape, err)
	}
	if c.JSON {
		return writeJSON(env.Stdout, bill)
	}
	tw := table(env.Stdout)
	fmt.Fprintf(tw, "%s\tCALLS\tINPUT\tCACHED\tCACHE WRITE\tOUTPUT\tRATE IN/CACHED/WRITE/OUT PER MTOK\tCOST\n", map[string]string{"model": "MODEL", "agent": "AGENT", "step": "STEP"}[c.By])
	unpriced, estimated, modelless := 0, 0, 0
	for _, r := range append(bill.Rows, bill.Total) {
		rate, key := "-", r.Key
		if c.By == "model" && key == "?" {
			// Calls that name no model (listing the models, a file
			// upload): nothing to price unless they used tokens.
			key, modelless = "(no model)", r.Calls
		}
		if r.Rate != nil {
			rate = fmt.Sprintf("$%s / $%s / $%s / $%s", perMTok(r.Rate.Input), perMTok(r.Rate.Cached), perMTok(r.Rate.CacheWrite), perMTok(r.Rate.Output))
		} else if c.By == "model" && r.Key != "total" && (r.Key != "?" || r.Unpriced > 0) {
			rate = "no price"
		}
		a := timeline.Approx(r.Estimated)
		cost := a + breaker.USD(r.Cost)
		if r.Unpriced > 0 {
			cost += "+?"
		}
		if r.Reported > 0 {
			cost += fmt.Sprintf(" (%s reported)", breaker.USD(r.Reported))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s%d\t%d\t%d\t%s%d\t%s\t%s\n", timeline.OneLine(key, 40), r.Calls, a, r.Usage.Input, r.Usage.Cached, r.Usage.CacheWrite, a, r.Usage.Output, rate, cost)
		if r.Key != "total" {
			unpriced += r.Unpriced
			estimated += r.Estimated
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRefused(env, bill, c.By)
	if f := bill.Fork; f != nil && f.FromParent.Calls > 0 {
		a, were := timeline.Approx(f.FromParent.Estimated), "were"
		if f.FromParent.Calls == 1 {
			were = "was"
		}
		fmt.Fprintf(env.Stdout, "a fork from call #%d: the %s before it %s answered from the parent's tape (%s%s of the total), not paid again; this run spent %s%s\n",
			f.Call, termtext.Count(f.FromParent.Calls, "call", "calls"), were, a, breaker.USD(f.FromParent.Cost), timeline.Approx(bill.Total.Estimated-f.FromParent.Estimated), breaker.USD(f.Spent))
	}
	if modelless > 0 {
		calls := "1 call"
		if modelless != 1 {
			calls = fmt.Sprintf("%d calls", modelless)
		}
		fmt.Fprintf(env.Stdout, "(no model): %s that named none, such as listing the models: they cost nothing unless they used tokens\n", calls)
	}
	if unpriced > 0 {
		fmt.Fprintf(env.Stdout, "%s used tokens at no known price (+?): the cost leaves them out\n", termtext.Count(unpriced, "call", "calls"))
	}
	switch {
	case estimated == 1:
		fmt.Fprintf(env.Stdout, "1 call's answer reported no usage (~): its tokens were counted from the text, "+
			"by the model's tokenizer for OpenAI's models, else at 4 bytes a token\n")
	case estimated > 1:
		fmt.Fprintf(env.Stdout, "%d calls' answers reported no usage (~): their tokens were counted from the text, "+
			"by the model's tokenizer for OpenAI's models, else at 4 bytes a token\n", estimated)
	}
	return nil
}

// perMTok writes a rate in dollars per million tokens as a person would
// ($0.1, not the 0.09999999999999999 a per-token price times a million
// gives).
func perMTok(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// printRefused lists the calls the circuit breaker refused, apart from
// the bill: never sent, they cost nothing.
func printRefused(env *Env, bill timeline.Bill, by string) {
	if len(bill.Refused) == 0 {
		return
	}
	var parts []string
	n := 0
	for _, r := range bill.Refused {
		key := r.Key
		switch {
		case by == timeline.ByStep:
			key = "step " + key
		case by == timeline.ByModel && key == "?":
			key = "(no model)"
		}
		// "step 2: 1, step 3: 1" (it was "2 1, 3 1").
		parts = append(parts, fmt.Sprintf("%s: %d", key, r.Calls))
		n += r.Calls
	}
	fmt.Fprintf(env.Stdout, "%s refused by the circuit breaker, not sent and not billed: %s\n", termtext.Count(n, "call", "calls"), strings.Join(parts, ", "))
}
