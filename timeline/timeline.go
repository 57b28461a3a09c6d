package timeline

import (
	"fmt"
	"hash/maphash"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Timeline is the turntable's model of one tape: a row per frame, read
// lazily. Opening costs the footer and the frame index (16 bytes a frame);
// a row's kind and time come from the index alone (Tape.KindAt), and a
// row's payload is decoded only when asked for, for the rows on screen, and
// kept in a small cache. Cumulative tokens and cost are summed on demand up
// to the frame asked for, or all at once by IndexCosts in the background.
// A Timeline is safe for concurrent use.
type Timeline struct {
	t     *tapefmt.Tape
	path  string
	steps []int32 // frame numbers of the step.commit frames, ascending

	mu      sync.Mutex
	holds   int  // reads in the background not released yet (Hold)
	closing bool // Close was called: the last release closes the tape
	rows    map[int]Row
	costs   costIndex
	damage  damageSet // frames found unreadable (check.go)
	// evidence are the frames the tape's breaker.trip frames name.
	evidence map[int]bool
	// asks says, by llm.response frame, whether the answer called tools
	// (found when first asked: its body is read then).
	asks map[int]bool
	// prompts are llm.requests' context windows, hashed with seed, for
	// matching a call to the previous one of its conversation.
	prompts map[int]promptPrint
	seed    maphash.Seed
	// texts are frames' searched text, lower-cased, kept by the first
	// search that read them so later ones do not read them again
	// (sweep.go); textBytes is their size, at most maxTextCache.
	texts     [][]byte
	textBytes int
	// called is whether one of the first calledOf frames is a call
	// (StepCount of a tape without a step.commit, which grows).
	called   bool
	calledOf int
}

// Row is one frame as the timeline lists it.
type Row struct {
	Seq     int
	Kind    tapefmt.Kind
	Time    time.Duration
	Stream  uint32
	Step    int    // the step the frame belongs to; a step.commit closes its own step
	Summary string // one line (Describe)
	Tokens  int64  // llm.response: input plus output tokens
	Cost    float64
	Priced  bool // Cost is known (the model has a rate)
	// Estimated says the answer reported no usage: Tokens and Cost were
	// counted from the text (llmwire.CallUsage.Estimated), shown with "~".
	Estimated bool
	Error     bool // a failed call, a tool error, a non-zero exit, a breaker trip
	Fork      bool // run.start of a fork: it names a parent
	Trip      bool // breaker.trip
	// Evidence says a breaker.trip names this frame as its evidence (a
	// repeated call, an answer said again, the call that would pass the
	// cap).
	Evidence bool
	Payload  tapefmt.Payload
	Err      error       // the frame could not be read or decoded
	Damage   *FrameError // the frame or a blob it names does not read, once Detail or Check has found it
	// Pending marks a row of a store's tape not read yet (Peek): kind,
	// time and step are the index's, Summary is "…".
	Pending bool
}

// costIndex holds cumulative tokens and cost at each llm.response frame,
// summed up to frame upto (exclusive).
type costIndex struct {
	frames   []int32
	tokens   []int64
	cost     []float64
	unpriced []int32 // calls that used tokens at no known price
	// estimated counts the calls whose usage was counted, not reported.
	estimated []int32
	upto      int
	// parent is, for a fork, the part of cost its parent's tape answered:
	// the calls before the fork call (parentCall), not paid again.
	parent     []float64
	parentCall int64 // the fork call, -1 for a tape that is no fork: once forkRead
	forkRead   bool
}

// prefetchBlock is the unit, in frames, of a remote tape's rows fetched
// together: about a screen.
const prefetchBlock = 64

// blockOf is the prefetch block of frame i: its first and last frame.
func blockOf(i int) [2]int {
	return [2]int{i / prefetchBlock * prefetchBlock, (i/prefetchBlock+1)*prefetchBlock - 1}
}

// maxCachedRows bounds the decoded-row cache; a screen needs a few dozen.
const maxCachedRows = 4096

// Open opens the tape at path as a timeline.
func Open(path string) (*Timeline, error) { return OpenWith(path, nil) }

// OpenWith opens the tape at path, or the store's tape a URL names when
// remote takes it, as a timeline.
func OpenWith(path string, remote RemoteOpener) (*Timeline, error) {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return nil, err
	}
	tl, err := newTimeline(t, path)
	if err != nil {
		t.Close()
		return nil, err
	}
	return tl, nil
}

// newTimeline reads the frame index of t (loading it into memory once) and
// finds the step boundaries. It decodes no payload but those of the
// breaker.trip frames (a run has one at most), for their evidence.
func newTimeline(t *tapefmt.Tape, path string) (*Timeline, error) {
	tl := &Timeline{t: t, path: path, rows: map[int]Row{}, seed: maphash.MakeSeed()}
	// Asking for frames of kind 0, which no frame has, loads the frame
	// index into memory and yields nothing: KindAt is then a memory read.
	for _, err := range t.Frames(0) {
		if err != nil {
			return nil, err
		}
	}
	for i := range t.Len() {
		k, _, err := t.KindAt(i)
		if err != nil {
			return nil, err
		}
		switch k {
		case tapefmt.KindStep:
			tl.steps = append(tl.steps, int32(i))
		case tapefmt.KindBreakerTrip:
			tl.addEvidence(i)
		}
	}
	return tl, nil
}

// addEvidence notes the frames the breaker.trip at frame i names; a trip
// that does not read names none (its row says why).
func (tl *Timeline) addEvidence(i int) {
	f, err := tl.t.Frame(i)
	if err != nil {
		return
	}
	p, err := f.Decode()
	trip, ok := p.(*tapefmt.BreakerTrip)
	if err != nil || !ok {
		return
	}
	if tl.evidence == nil {
		tl.evidence = map[int]bool{}
	}
	for _, seq := range trip.Evidence {
		if seq < uint64(tl.t.Len()) {
			tl.evidence[int(seq)] = true
		}
	}
}

// Close closes the tape.
//
// While reads begun with Hold are not released, the tape stays open: it
// is closed when the last of them is.
func (tl *Timeline) Close() error {
	tl.mu.Lock()
	tl.closing = true
	held := tl.holds > 0
	tl.mu.Unlock()
	if held {
		return nil
	}
	return tl.t.Close()
}

// Hold keeps the tape open for a read in the background (a comparison, a
// search) until the returned release is called, should the timeline be
// closed meanwhile (a track that lets it go for a newer one): Close then
// takes effect at the last release. Release is safe to call more than
// once.
func (tl *Timeline) Hold() (release func()) {
	tl.mu.Lock()
	tl.holds++
	tl.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			tl.mu.Lock()
			tl.holds--
			last := tl.holds == 0 && tl.closing
			tl.mu.Unlock()
			if last {
				tl.t.Close()
			}
		})
	}
}

// Path returns the tape's path as given.
func (tl *Timeline) Path() string { return tl.path }

// Tape returns the open tape.
func (tl *Timeline) Tape() *tapefmt.Tape { return tl.t }

// Len returns the number of frames.
func (tl *Timeline) Len() int { return tl.t.Len() }

// Steps returns the number of whole steps (step.commit frames).
func (tl *Timeline) Steps() int { return len(tl.steps) }

// Recovered says what opening a tape without a footer dropped, or nil.
func (tl *Timeline) Recovered() *tapefmt.Recovery { return tl.t.Recovered() }

// KindAt returns frame i's kind and time from the index, without decoding.
func (tl *Timeline) KindAt(i int) (tapefmt.Kind, time.Duration) {
	k, d, _ := tl.t.KindAt(i)
	return k, d
}

// Duration is the time of the last frame.
func (tl *Timeline) Duration() time.Duration {
	if tl.Len() == 0 {
		return 0
	}
	_, d := tl.KindAt(tl.Len() - 1)
	return d
}

// StepOf returns the step frame i belongs to: the number of step.commit
// frames before it.
func (tl *Timeline) StepOf(i int) int {
	return sort.Search(len(tl.steps), func(s int) bool { return int(tl.steps[s]) >= i })
}

// StepCount is the number of steps as a person counts them, everywhere
// the turntable counts: the whole steps (step.commit frames), and one
// more when frames other than the run's end follow the last of them (a
// step the run ended in, never committed); with none, one when the run
// made a call (firstStep).
func (tl *Timeline) StepCount() int {
	kindAt := func(i int) tapefmt.Kind { k, _ := tl.KindAt(i); return k }
	n := len(tl.steps)
	if n == 0 {
		// Every draw asks: the frames read once, as the tape grows.
		tl.mu.Lock()
		defer tl.mu.Unlock()
		for ; !tl.called && tl.calledOf < tl.Len(); tl.calledOf++ {
			tl.called = kindAt(tl.calledOf) == tapefmt.KindLLMRequest
		}
		if tl.called {
			return 1
		}
		return 0
	}
	return personSteps(n, int(tl.steps[n-1]), tl.Len(), kindAt)
}

// personSteps is the steps of a tape of length frames as a person counts
// them: whole, the step.commit frames, the last at frame last, and one
// more when frames other than the run's end follow it.
func personSteps(whole, last, length int, kindAt func(int) tapefmt.Kind) int {
	end := length - 1
	switch {
	case end == last:
		return whole
	case end == last+1 && kindAt(end) == tapefmt.KindRunEnd:
		return whole
	}
	return whole + 1
}

// firstStep is the steps of a tape of length frames without a step.commit
// frame: one when it holds a call, which opens the run's first step (the
// recorder commits a step at the call after it, so a run of one call
// commits none), else none.
func firstStep(length int, kindAt func(int) tapefmt.Kind) int {
	for i := range length {
		if kindAt(i) == tapefmt.KindLLMRequest {
			return 1
		}
	}
	return 0
}

// StepsOf is the steps of t as a person counts them, as everywhere jukebox
// counts (the turntable, ls, diff): the whole steps, and the one the run
// ended in when it was never committed (Timeline.StepCount).
func StepsOf(t *tapefmt.Tape) (int, error) {
	whole := t.Steps()
	for _, err := range t.Frames(0) { // loads the frame index: KindAt reads memory
		if err != nil {
			return 0, err
		}
	}
	kindAt := func(i int) tapefmt.Kind { k, _, _ := t.KindAt(i); return k }
	if whole == 0 {
		return firstStep(t.Len(), kindAt), nil
	}
	for i := t.Len() - 1; i >= 0; i-- {
		k, _, err := t.KindAt(i)
		if err != nil {
			return 0, err
		}
		if k == tapefmt.KindStep {
			return personSteps(whole, i, t.Len(), kindAt), nil
		}
	}
	return whole, nil
}

// StepNumber is the step frame i belongs to, from 0, as StepCount counts:
// the run's end after the last whole step belongs to that step.
func (tl *Timeline) StepNumber(i int) int {
	return max(0, min(tl.StepOf(i), tl.StepCount()-1))
}

// StepStart returns the first frame of step s (0 for s ≤ 0; Len for a step
// past the end).
func (tl *Timeline) StepStart(s int) int {
	switch {
	case s <= 0:
		return 0
	case s > len(tl.steps):
		return tl.Len()
	}
	return int(tl.steps[s-1]) + 1
}

// FrameAt returns the last frame whose time is at or before d (0 when none).
func (tl *Timeline) FrameAt(d time.Duration) int {
	n := sort.Search(tl.Len(), func(i int) bool { _, t := tl.KindAt(i); return t > d })
	return max(n-1, 0)
}

// Ready reports whether Row(i) answers without waiting on the network:
// always for a tape in a file; for a tape in a store, once the row has
// been read (a row may need a blob as well as its frame: an answer's body
// for its usage), which a reader in the background does (Rows).
func (tl *Timeline) Ready(i int) bool {
	if !tapefmt.IsRemote(tl.path) {
		return true
	}
	tl.mu.Lock()
	_, ok := tl.rows[i]
	tl.mu.Unlock()
	return ok
}

// Rows reads the rows of spans (first and last frames) that are not
// ready, their frames fetched together first: what a screen of a store's
// tape draws, read in the background. The error is the first row's that
// did not read (a store's that did not answer: such a row stays not
// ready, to be asked for again).
func (tl *Timeline) Rows(spans ...[2]int) error {
	tl.t.Prefetch(spans...)
	var first error
	for _, sp := range spans {
		for i := max(sp[0], 0); i <= min(sp[1], tl.Len()-1); i++ {
			if !tl.Ready(i) {
				if r := tl.Row(i); r.Err != nil && first == nil {
					first = r.Err
				}
			}
		}
	}
	return first
}

// Peek is Row(i) when it answers without a request, else the row as the
// index alone tells it (Pending): what a screen draws while a store's
// frames are on their way.
func (tl *Timeline) Peek(i int) Row {
	if tl.Ready(i) {
		return tl.Row(i)
	}
	k, t := tl.KindAt(i)
	return Row{Seq: i, Kind: k, Time: t, Step: tl.StepOf(i), Summary: "…", Pending: true}
}

// Row returns frame i as a row, decoding its payload on first use.
func (tl *Timeline) Row(i int) Row {
	tl.mu.Lock()
	r, ok := tl.rows[i]
	tl.mu.Unlock()
	if ok {
		return r
	}
	// A tape in a store reads by round trips: the rows of this one's block,
	// about a screen, come in one round of requests (aligned blocks, so
	// that rows read in order ask once a block).
	tl.t.PrefetchFor(i, blockOf(i))
	r = tl.readRow(i)
	tl.mu.Lock()
	if e := tl.damage[i]; e != nil {
		r.Damage, r.Error = e, true
	}
	if len(tl.rows) >= maxCachedRows {
		clear(tl.rows)
	}
	if r.Err == nil || !tapefmt.IsRemote(tl.path) {
		tl.rows[i] = r // a store's frame that did not arrive is asked for again
	}
	tl.mu.Unlock()
	return r
}

func (tl *Timeline) readRow(i int) Row {
	r := Row{Seq: i, Step: tl.StepOf(i), Evidence: tl.evidence[i]}
	f, err := tl.t.Frame(i)
	if err != nil {
		r.Kind, r.Time = tl.KindAt(i)
		r.Err, r.Summary, r.Error = err, "unreadable: "+err.Error(), true
		return r
	}
	r.Kind, r.Time, r.Stream = f.Kind, f.Time, f.Stream
	p, err := f.Decode()
	if err != nil {
		r.Err, r.Summary, r.Error = err, "undecodable: "+err.Error(), true
		return r
	}
	r.Payload, r.Summary = p, Describe(p)
	switch p := p.(type) {
	case *tapefmt.LLMResponse:
		c := tl.usage(i, p)
		r.Tokens, r.Cost, r.Priced, r.Estimated = c.Usage.Total(), c.Cost, c.Priced, c.Estimated
		r.Error = p.Error != "" || p.Status >= 400
	case *tapefmt.ToolResult:
		r.Error = p.IsError
	case *tapefmt.RunEnd:
		r.Error = p.ExitCode != 0 || p.Signal != "" || p.Error != ""
	case *tapefmt.RunStart:
		r.Fork = p.Parent != nil
		if r.Fork {
			r.Summary += fmt.Sprintf(" (fork of %s at frame %d)", shortPath(p.Parent.Path), p.Parent.Frame)
		}
	case *tapefmt.BreakerTrip:
		r.Trip, r.Error = true, true
	}
	return r
}

func shortPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// usage is the usage, model and cost of the response at frame i, found by
// llmwire.ResponseUsage; its request is looked for only when the frame
// lacks the model or usage.
func (tl *Timeline) usage(i int, p *tapefmt.LLMResponse) llmwire.CallUsage {
	return llmwire.ResponseUsage(p, tl.t.Blob, func() llmwire.Call {
		req, _ := tl.request(i, p.Call)
		return llmwire.RequestCall(req, tl.t.Blob)
	})
}

// pairWindow bounds how far a request looks for its response and back.
const pairWindow = 20000

// request finds the llm.request of call before frame i.
func (tl *Timeline) request(i int, call uint64) (*tapefmt.LLMRequest, int) {
	for j := i - 1; j >= max(0, i-pairWindow); j-- {
		if k, _ := tl.KindAt(j); k == tapefmt.KindLLMRequest {
			if p, ok := tl.decode(j).(*tapefmt.LLMRequest); ok && p.Call == call {
				return p, j
			}
		}
	}
	return nil, -1
}

// response finds the llm.response of call after frame i.
func (tl *Timeline) response(i int, call uint64) (*tapefmt.LLMResponse, int) {
	for j := i + 1; j < min(tl.Len(), i+pairWindow); j++ {
		if k, _ := tl.KindAt(j); k == tapefmt.KindLLMResponse {
			if p, ok := tl.decode(j).(*tapefmt.LLMResponse); ok && p.Call == call {
				return p, j
			}
		}
	}
	return nil, -1
}

func (tl *Timeline) decode(i int) tapefmt.Payload {
	if r := tl.Row(i); r.Err == nil {
		return r.Payload
	}
	return nil
}
