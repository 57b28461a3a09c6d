package diffview

// Report is the JSON form of a Result: both sides with their totals, the
// first divergence, the delta and every aligned pair.
type Report struct {
	Left       Side        `json:"left"`
	Right      Side        `json:"right"`
	Equal      bool        `json:"equal"`
	Divergence *Divergence `json:"first_divergence"` // null when Equal
	// FilesLeftOut names the side whose file changes were not compared
	// ("left" or "right"): only that run recorded them.
	FilesLeftOut string `json:"files_left_out,omitempty"`
	// OutputLeftOut names the side whose output was not compared: the
	// other run's process was not one jukebox started, so it has none.
	OutputLeftOut string       `json:"output_left_out,omitempty"`
	Delta         Totals       `json:"delta"` // right minus left
	Pairs         []PairReport `json:"pairs"`
}

// Side is one timeline in a Report.
type Side struct {
	Name   string `json:"name"`
	Totals Totals `json:"totals"`
}

// PairReport is one aligned pair in a Report. A changed pair carries the
// word diffs of its titles and bodies, in full.
type PairReport struct {
	Op    Op        `json:"op"`
	Left  *FrameRef `json:"left,omitempty"`
	Right *FrameRef `json:"right,omitempty"`
	Title []Span    `json:"title_diff,omitempty"`
	Body  []Span    `json:"body_diff,omitempty"`
}

// FrameRef names a frame in a Report.
type FrameRef struct {
	Seq       int    `json:"seq"`
	Kind      string `json:"kind"`
	Signature string `json:"signature"`
	Title     string `json:"title"`
}

// Report returns r in its JSON form.
func (r *Result) Report() Report {
	rep := Report{Left: Side{r.Left.Name, r.LeftTotals}, Right: Side{r.Right.Name, r.RightTotals},
		Equal: r.equal(), FilesLeftOut: r.FilesLeftOut, OutputLeftOut: r.OutputLeftOut, Delta: r.Delta, Pairs: make([]PairReport, len(r.Pairs))}
	if d, ok := r.Divergence(); ok {
		rep.Divergence = &d
	}
	for i, p := range r.Pairs {
		pr := PairReport{Op: p.Op, Title: p.Title, Body: p.Body}
		if p.Left >= 0 {
			pr.Left = ref(r.Left.Frames[p.Left])
		}
		if p.Right >= 0 {
			pr.Right = ref(r.Right.Frames[p.Right])
		}
		rep.Pairs[i] = pr
	}
	return rep
}

func ref(f Frame) *FrameRef {
	return &FrameRef{Seq: f.Seq, Kind: f.Kind, Signature: f.Signature, Title: f.Title}
}
