package diffview

import "fmt"

// Op says how a Pair's two sides relate.
type Op uint8

// Pair operations.
const (
	Same      Op = iota // on both sides, equal in signature, title and body
	Changed             // on both sides with one signature; title or body differ
	OnlyLeft            // only on the left: the right run did not do it
	OnlyRight           // only on the right: the right run did it in addition
)

var opNames = [...]string{Same: "same", Changed: "changed", OnlyLeft: "only-left", OnlyRight: "only-right"}

// String returns the op's name as JSON writes it.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// MarshalText writes the op's name.
func (o Op) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an op's name.
func (o *Op) UnmarshalText(b []byte) error {
	for i, n := range opNames {
		if n == string(b) {
			*o = Op(i)
			return nil
		}
	}
	return fmt.Errorf("diffview: unknown op %q", b)
}

// Pair is one row of an alignment: indexes into the left and right
// timelines' Frames, -1 for the side that has no frame. Compare fills in the
// word diffs of a Changed pair's titles and bodies; align leaves them nil.
type Pair struct {
	Op    Op     `json:"op"`
	Left  int    `json:"left"`
	Right int    `json:"right"`
	Title []Span `json:"title_diff,omitempty"`
	Body  []Span `json:"body_diff,omitempty"`
}

// align pairs the frames of a and b. Frames whose signature, title and body
// are all equal anchor the alignment first (an LCS over whole frames); the
// runs between anchors are then aligned on signatures alone (an LCS over
// signatures), so that a frame that changed pairs with its counterpart and
// an inserted or deleted frame stands alone. Both passes use Myers' O(ND)
// algorithm, so similar timelines align in near-linear time.
func align(a, b Timeline) []Pair {
	var in interner
	ka, sa := in.frames(a.Frames)
	kb, sb := in.frames(b.Frames)
	pairs := make([]Pair, 0, max(len(ka), len(kb)))
	pi, pj := 0, 0
	lcs(ka, kb, effortLimit, func(i, j int) {
		pairs = alignGap(pairs, sa[pi:i], sb[pj:j], ka[pi:i], kb[pj:j], pi, pj)
		pairs = append(pairs, Pair{Op: Same, Left: i, Right: j})
		pi, pj = i+1, j+1
	})
	return alignGap(pairs, sa[pi:], sb[pj:], ka[pi:], kb[pj:], pi, pj)
}

// alignGap aligns a run of frames between two anchors on signatures; i0 and
// j0 are the run's offsets in the whole timelines.
func alignGap(pairs []Pair, sa, sb, ka, kb []int32, i0, j0 int) []Pair {
	pi, pj := 0, 0
	flush := func(i, j int) {
		for ; pi < i; pi++ {
			pairs = append(pairs, Pair{Op: OnlyLeft, Left: i0 + pi, Right: -1})
		}
		for ; pj < j; pj++ {
			pairs = append(pairs, Pair{Op: OnlyRight, Left: -1, Right: j0 + pj})
		}
	}
	if len(sa) > 0 && len(sb) > 0 {
		lcs(sa, sb, effortLimit, func(i, j int) {
			flush(i, j)
			op := Changed
			if ka[i] == kb[j] {
				op = Same
			}
			pairs = append(pairs, Pair{Op: op, Left: i0 + i, Right: j0 + j})
			pi, pj = i+1, j+1
		})
	}
	flush(len(sa), len(sb))
	return pairs
}

// firstDivergence returns the index in pairs of the first pair that is not
// Same, or -1 when the timelines agree frame for frame.
func firstDivergence(pairs []Pair) int {
	for i, p := range pairs {
		if p.Op != Same {
			return i
		}
	}
	return -1
}

// interner numbers distinct frames and distinct signatures, so the LCS
// compares integers.
type interner struct {
	keys map[frameKey]int32
	sigs map[string]int32
}

type frameKey struct{ sig, title, body string }

func (in *interner) frames(fs []Frame) (keys, sigs []int32) {
	if in.keys == nil {
		in.keys, in.sigs = map[frameKey]int32{}, map[string]int32{}
	}
	keys, sigs = make([]int32, len(fs)), make([]int32, len(fs))
	for i, f := range fs {
		keys[i] = intern(in.keys, frameKey{f.Signature, f.Title, f.Body})
		sigs[i] = intern(in.sigs, f.Signature)
	}
	return keys, sigs
}

func intern[K comparable](m map[K]int32, k K) int32 {
	id, ok := m[k]
	if !ok {
		id = int32(len(m))
		m[k] = id
	}
	return id
}
