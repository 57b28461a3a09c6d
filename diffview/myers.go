package diffview

// effortLimit bounds the edit distance the middle-snake search explores in
// one sub-problem before it settles for a good split instead of the best
// one (the "too expensive" heuristic of GNU diff). Below it the alignment is
// a true LCS; above it, still a valid alignment, found in O((N+M)·limit).
const effortLimit = 1024

// myers finds a longest common subsequence of two sequences of small
// integers with the linear-space divide-and-conquer form of Myers' O(ND)
// algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986, §4b).
type myers struct {
	a, b   []int32
	vf, vb []int // furthest x per diagonal, forward and backward; centre at off
	off    int
	limit  int
	match  func(i, j int) // called for each matched pair, in order
}

// lcs calls match(i, j) for each pair of a longest common subsequence of a
// and b (or a long one, when the sequences are very different), in order.
// Elements of a and b are small non-negative integers. Elements that occur
// on one side only cannot be part of any common subsequence; they are set
// aside first, which leaves the LCS unchanged and makes two runs that share
// a prefix and then differ in every element cheap to align.
func lcs(a, b []int32, limit int, match func(i, j int)) {
	fa, ia, fb, ib := common(a, b)
	n := len(fa) + len(fb) + 2
	m := &myers{a: fa, b: fb, vf: make([]int, 2*n+1), vb: make([]int, 2*n+1), off: n, limit: limit,
		match: func(i, j int) { match(ia[i], ib[j]) }}
	m.compare(0, len(fa), 0, len(fb))
}

// common returns the elements of a that occur in b and those of b that
// occur in a, each with their indexes in the original.
func common(a, b []int32) (fa []int32, ia []int, fb []int32, ib []int) {
	var top int32
	for _, x := range a {
		top = max(top, x)
	}
	for _, x := range b {
		top = max(top, x)
	}
	in := make([]uint8, top+1) // bit 0: in a, bit 1: in b
	for _, x := range a {
		in[x] |= 1
	}
	for _, x := range b {
		in[x] |= 2
	}
	keep := func(s []int32) ([]int32, []int) {
		f, idx := make([]int32, 0, len(s)), make([]int, 0, len(s))
		for i, x := range s {
			if in[x] == 3 {
				f, idx = append(f, x), append(idx, i)
			}
		}
		return f, idx
	}
	fa, ia = keep(a)
	fb, ib = keep(b)
	return fa, ia, fb, ib
}

// compare aligns a[a0:a1] with b[b0:b1].
func (m *myers) compare(a0, a1, b0, b1 int) {
	for a0 < a1 && b0 < b1 && m.a[a0] == m.b[b0] {
		m.match(a0, b0)
		a0, b0 = a0+1, b0+1
	}
	suffix := 0
	for a1 > a0 && b1 > b0 && m.a[a1-1] == m.b[b1-1] {
		a1, b1, suffix = a1-1, b1-1, suffix+1
	}
	if a0 < a1 && b0 < b1 {
		x, y, u, v := m.split(a0, a1, b0, b1)
		m.compare(a0, x, b0, y)
		for i := x; i < u; i++ {
			m.match(i, y+i-x)
		}
		m.compare(u, a1, v, b1)
	}
	for i := range suffix {
		m.match(a1+i, b1+i)
	}
}

// split returns the middle snake (x,y)→(u,v) of an optimal edit path
// through a[a0:a1]×b[b0:b1], whose first and last elements differ, or, past
// the effort limit, the point furthest along the forward paths.
func (m *myers) split(a0, a1, b0, b1 int) (x, y, u, v int) {
	n, mm := a1-a0, b1-b0
	delta := n - mm
	odd := delta&1 != 0
	vf, vb, off := m.vf, m.vb, m.off
	vf[off+1], vb[off+1] = 0, 0
	for d := 0; d <= (n+mm+1)/2; d++ {
		for k := -d; k <= d; k += 2 {
			x := nextX(vf, off, k, d)
			sx, sy := x, x-k
			for x < n && x-k < mm && m.a[a0+x] == m.b[b0+x-k] {
				x++
			}
			vf[off+k] = x
			if kr := delta - k; odd && kr >= -(d-1) && kr <= d-1 && x+vb[off+kr] >= n {
				return a0 + sx, b0 + sy, a0 + x, b0 + x - k
			}
		}
		for kr := -d; kr <= d; kr += 2 {
			xr := nextX(vb, off, kr, d)
			sxr, syr := xr, xr-kr
			for xr < n && xr-kr < mm && m.a[a1-1-xr] == m.b[b1-1-(xr-kr)] {
				xr++
			}
			vb[off+kr] = xr
			if k := delta - kr; !odd && k >= -d && k <= d && vf[off+k]+xr >= n {
				return a1 - xr, b1 - (xr - kr), a1 - sxr, b1 - syr
			}
		}
		if d >= m.limit {
			x, y := m.furthest(n, mm, d)
			return a0 + x, b0 + y, a0 + x, b0 + y
		}
	}
	panic("diffview: middle snake not found")
}

// nextX is the x a d-path reaches on diagonal k before its final snake.
func nextX(v []int, off, k, d int) int {
	if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
		return v[off+k+1] // a step down: an insertion
	}
	return v[off+k-1] + 1 // a step right: a deletion
}

// furthest returns the in-bounds end of a forward d-path with the largest
// x+y: the split point when the search gives up.
func (m *myers) furthest(n, mm, d int) (int, int) {
	bx, by := 0, 0
	for k := -d; k <= d; k += 2 {
		x := m.vf[m.off+k]
		y := x - k
		if x <= n && y <= mm && y >= 0 && x+y > bx+by {
			bx, by = x, y
		}
	}
	if bx+by == 0 {
		return 1, 0 // cannot happen for d ≥ 1; still, always make progress
	}
	return bx, by
}
