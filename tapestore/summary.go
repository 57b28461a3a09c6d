package tapestore

import (
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// Summary is what the store keeps of a run beside its tape, for `ls URL`:
// the run's tokens by model, never a cost, which is worked out when the
// summary is read, with the prices of then (Timeline), the same way as
// for a tape here.
type Summary struct {
	Name      string                 `json:"name,omitempty"`
	Argv      []string               `json:"argv,omitempty"`
	Tags      map[string]string      `json:"tags,omitempty"`
	User      string                 `json:"user,omitempty"`
	Host      string                 `json:"host,omitempty"` // the run's, which may not be the uploader's (Record.Host)
	Git       *tapefmt.GitRef        `json:"git,omitempty"`
	Started   time.Time              `json:"started"`
	Duration  time.Duration          `json:"duration_ns"`
	Frames    int                    `json:"frames"`
	Steps     int                    `json:"steps"`
	Calls     int                    `json:"llm_calls"`
	Usage     tapefmt.Usage          `json:"tokens"`
	Models    []timeline.ModelTokens `json:"models,omitempty"`
	Reported  float64                `json:"reported_cost_usd,omitempty"` // the agent's turns' own costs
	Estimated int                    `json:"estimated_calls,omitempty"`
	Exit      *tapefmt.RunEnd        `json:"exit,omitempty"`
	Parent    *tapefmt.ParentRef     `json:"parent,omitempty"`
	Recovered *tapefmt.Recovery      `json:"recovered,omitempty"`
	Sealed    bool                   `json:"sealed"`
	Breaker   *tapefmt.BreakerTrip   `json:"breaker,omitempty"`
	// Fork is, for a fork, its fork call and the tokens of its own calls
	// from there on (timeline.SummaryFork); summaries stored before it
	// was kept have none.
	Fork *ForkSummary `json:"fork,omitempty"`
	// FrozenCost and FrozenUnpriced are read from summaries stored
	// before the store kept tokens by model (they held a cost worked out
	// at upload); never written.
	FrozenCost     float64  `json:"cost_usd,omitempty"`
	FrozenUnpriced []string `json:"unpriced_models,omitempty"`
}

// ForkSummary is what the store keeps of what a fork spent itself.
type ForkSummary struct {
	Call   uint64                 `json:"call"`
	Models []timeline.ModelTokens `json:"models,omitempty"`
}

// storeSummary is what the store keeps of s.
func storeSummary(s timeline.Summary) *Summary {
	out := &Summary{Name: s.Name, Argv: s.Argv, Tags: s.Tags, User: s.User, Host: s.Host, Git: s.Git, Started: s.Started, Duration: s.Duration,
		Frames: s.Frames, Steps: s.Steps, Calls: s.Calls, Usage: s.Usage, Models: s.Models,
		Reported: s.Reported, Estimated: s.Estimated, Exit: s.Exit, Parent: s.Parent,
		Recovered: s.Recovered, Sealed: s.Sealed, Breaker: s.Breaker}
	if s.Fork != nil {
		out.Fork = &ForkSummary{Call: s.Fork.Call, Models: s.Fork.Models}
	}
	return out
}

// Timeline is the summary as ls shows it of the tape at path, its cost
// worked out now (timeline.Price); a summary stored before tokens were
// kept by model shows the cost it was stored with.
func (s *Summary) Timeline(path string) timeline.Summary {
	t := timeline.Summary{Path: path, Name: s.Name, Argv: s.Argv, Tags: s.Tags, User: s.User, Host: s.Host, Git: s.Git, Started: s.Started,
		Duration: s.Duration, Frames: s.Frames, Steps: s.Steps, Calls: s.Calls, Usage: s.Usage,
		Models: s.Models, Reported: s.Reported, Estimated: s.Estimated, Exit: s.Exit,
		Parent: s.Parent, Recovered: s.Recovered, Sealed: s.Sealed, Breaker: s.Breaker}
	if s.Fork != nil {
		t.Fork = &timeline.SummaryFork{Call: s.Fork.Call, Models: s.Fork.Models}
	}
	t.SetCost()
	if s.Models == nil && s.Calls > 0 {
		t.Cost, t.Unpriced, t.Fork = s.FrozenCost+s.Reported, s.FrozenUnpriced, nil
	}
	return t
}
