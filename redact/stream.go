package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// A streamed answer (server-sent events) says its text in pieces, one
// JSON string per event at the same place (choices.0.delta.content,
// delta.text), so a secret the model streams split across tokens is in
// no single piece. Stream joins the pieces of each place, masks the
// joined text, and writes each piece back with its share of the masked
// text: the first piece of a match holds Redacted, the others lose their
// part of it. Events are then masked one by one as any bytes, and the
// chunk table is moved to the events' new ends.

// piece is one JSON string literal of an event: where it is in the
// event's bytes, and its decoded value.
type piece struct {
	event, from, to int
	text            string
}

// Stream masks a streamed body and moves its chunk table to fit.
func (m *Masker) Stream(data []byte, chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	var s StreamScan
	s.m = m
	s.data = data
	s.cut()
	return s.finish(chunks)
}

// StreamScan does Stream's reading of a body as it arrives: it cuts the
// events out and walks their JSON, so that what is left when the body is
// whole (Finish) is masking the joined texts and the events. Write and
// Finish are called from one goroutine at a time.
type StreamScan struct {
	m    *Masker
	data []byte // what was written, in the scan's own copy
	// next is where the event being cut starts; line, where its next
	// line does.
	next, line int
	evs        []event
	ps         *placeSet // the places of the events' strings, by path
	w          jsonWalker
}

// placeSet is the places of one body's strings: one per JSON path, a
// piece for each event that has it. Those of a finished scan are kept for
// the next (placePool): a streamed answer's places take as many pieces as
// it has events, made again for every answer of a run.
type placeSet struct {
	byPath map[string]*place
	order  []*place // in the order of their first pieces
	spare  []*place
}

var placePool = sync.Pool{New: func() any { return &placeSet{byPath: map[string]*place{}} }}

// What a finished scan keeps for the next: places of a joined text and a
// count of pieces an ordinary answer has, and as many places as it has
// paths (an upstream's answer of thousands of paths is not kept).
const (
	maxPooledText   = 64 << 10
	maxPooledPieces = 4096
	maxPooledPlaces = 64
)

// at is the place of path, made (or taken from the spares) when new.
func (ps *placeSet) at(path []byte) *place {
	if pl := ps.byPath[string(path)]; pl != nil { // looked up without a copy of path
		return pl
	}
	var pl *place
	if n := len(ps.spare); n > 0 {
		pl, ps.spare = ps.spare[n-1], ps.spare[:n-1]
	} else {
		pl = &place{pieces: make([]piece, 0, 64), ends: make([]int, 0, 64)}
	}
	ps.byPath[string(path)] = pl
	ps.order = append(ps.order, pl)
	return pl
}

// release empties ps into placePool.
func (ps *placeSet) release() {
	for _, pl := range ps.order {
		if cap(pl.text) <= maxPooledText && cap(pl.pieces) <= maxPooledPieces && len(ps.spare) < maxPooledPlaces {
			clear(pl.pieces) // their texts
			pl.pieces, pl.text, pl.ends = pl.pieces[:0], pl.text[:0], pl.ends[:0]
			ps.spare = append(ps.spare, pl)
		}
	}
	clear(ps.order)
	ps.order = ps.order[:0]
	clear(ps.byPath)
	placePool.Put(ps)
}

// NewStream starts the scan of a body that will be written to it.
func (m *Masker) NewStream() *StreamScan { return &StreamScan{m: m} }

// Write adds p, the next bytes of the body, and reads the events it ends.
func (s *StreamScan) Write(p []byte) {
	s.data = append(s.data, p...)
	s.cut()
}

// Finish masks data, the whole body, as Stream does, with the scan's
// work: when data is not exactly what was written, Stream reads it anew.
func (s *StreamScan) Finish(data []byte, chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	if !bytes.Equal(data, s.data) {
		return s.m.Stream(data, chunks)
	}
	return s.finish(chunks)
}

// cut cuts the events that end in s.data (after each blank line) and
// walks each one's data line. The cuts made on a part of a body are the
// first cuts made on the whole: a cut depends on the bytes before it.
func (s *StreamScan) cut() {
	for {
		nl := bytes.IndexByte(s.data[s.line:], '\n')
		if nl < 0 {
			return
		}
		line := s.data[s.line : s.line+nl+1]
		s.line += nl + 1
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			s.evs = append(s.evs, event{raw: s.data[s.next:s.line:s.line]})
			s.walk(len(s.evs) - 1)
			s.next = s.line
		}
	}
}

// walk adds the string values of event i to their places.
func (s *StreamScan) walk(i int) {
	if s.ps == nil {
		s.ps = placePool.Get().(*placeSet)
	}
	ev := &s.evs[i]
	ev.masked = ev.raw
	line, start := dataLine(ev.raw)
	s.w.walk(line, func(path []byte, from, to int, text []byte) {
		s.ps.at(path).add(piece{event: i, from: start + from, to: start + to}, text)
	})
}

// finish masks the whole body, s.data, cut and walked up to its end.
func (s *StreamScan) finish(chunks tapefmt.Chunks) ([]byte, tapefmt.Chunks) {
	defer func() {
		if s.ps != nil {
			s.ps.release() // nothing returned holds a place's memory
			s.ps = nil
		}
	}()
	m, data := s.m, s.data
	if !bytes.HasPrefix(data, []byte("data:")) && !bytes.Contains(data, []byte("\ndata:")) || len(s.evs) == 0 && s.next == len(data) {
		// Not server-sent events (nor any event at all).
		masked := m.Mask(data)
		return masked, moveChunks(chunks, []int{len(data)}, []int{len(masked)})
	}
	if s.next < len(data) {
		s.evs = append(s.evs, event{raw: data[s.next:len(data):len(data)]})
		s.walk(len(s.evs) - 1)
		s.next = len(data)
	}
	if len(s.evs) < 2 {
		masked := m.Mask(data)
		return masked, moveChunks(chunks, []int{len(data)}, []int{len(masked)})
	}
	evs := s.evs
	m.maskPlaces(evs, s.ps.order)
	// Where the rules find nothing in the whole body they find nothing in
	// any of its events (each is a part of it after a line's end).
	mask := m.Mask
	if !anyRule(data) {
		mask = m.maskPatterns
	}
	olds, news := make([]int, len(evs)), make([]int, len(evs))
	out := make([]byte, 0, len(data)+len(data)/8)
	oldEnd := 0
	for i, ev := range evs {
		oldEnd += len(ev.raw)
		out = append(out, mask(ev.masked)...)
		olds[i], news[i] = oldEnd, len(out)
	}
	return out, moveChunks(chunks, olds, news)
}

// event is one server-sent event, its blank line included.
type event struct {
	raw, masked []byte
}

// maskPlaces masks the joined text of each place across the events and
// sets each event's masked bytes.
func (m *Masker) maskPlaces(evs []event, order []*place) {
	edits := map[int][]piece{} // per event, the pieces to write back
	for _, pl := range order {
		// Mask returns its argument itself when nothing matched: most
		// places are compared without a copy of their text.
		out := m.Mask(pl.text)
		if len(out) == len(pl.text) && (len(out) == 0 || &out[0] == &pl.text[0]) {
			continue
		}
		whole, masked := string(pl.text), string(out)
		if masked == whole {
			continue
		}
		for j := range pl.pieces {
			pl.pieces[j].text = whole[pl.start(j):pl.ends[j]]
		}
		for _, p := range share(pl.pieces, whole, masked) {
			edits[p.event] = append(edits[p.event], p)
		}
	}
	for i, ps := range edits {
		evs[i].masked = rewrite(evs[i].raw, ps)
	}
}

// place is the pieces of one place (a path) across the events, in order,
// with their texts joined.
type place struct {
	pieces []piece
	text   []byte
	ends   []int // where each piece's text ends in text
}

func (pl *place) start(j int) int {
	if j == 0 {
		return 0
	}
	return pl.ends[j-1]
}

// add adds p, whose text is text; an event with the place twice (a key
// given twice) counts its last, as a decoder reads it.
func (pl *place) add(p piece, text []byte) {
	if n := len(pl.pieces); n > 0 && pl.pieces[n-1].event == p.event {
		pl.text = pl.text[:pl.start(n-1)]
		pl.pieces, pl.ends = pl.pieces[:n-1], pl.ends[:n-1]
	}
	pl.pieces = append(pl.pieces, p)
	pl.text = append(pl.text, text...)
	pl.ends = append(pl.ends, len(pl.text))
}

// share gives each piece its part of masked. whole and masked differ in
// one span, whole[a:b] became masked[a:mb]; the pieces that overlap it
// keep what lies outside it, and the first of them holds the new text.
func share(ps []piece, whole, masked string) []piece {
	a := 0
	for a < len(whole) && a < len(masked) && whole[a] == masked[a] {
		a++
	}
	b, mb := len(whole), len(masked)
	for b > a && mb > a && whole[b-1] == masked[mb-1] {
		b, mb = b-1, mb-1
	}
	var out []piece
	off, given := 0, false
	for _, p := range ps {
		from, to := off, off+len(p.text)
		off = to
		overlap := from < b && to > a || !given && a == b && to >= a
		if !overlap {
			continue
		}
		text := whole[from:max(from, a)]
		if !given {
			text, given = text+masked[a:mb], true
		}
		if to > b {
			text += whole[b:to]
		}
		if text != p.text {
			p.text = text
			out = append(out, p)
		}
	}
	return out
}

// rewrite returns raw with each piece's literal replaced by its new text.
func rewrite(raw []byte, ps []piece) []byte {
	slices.SortFunc(ps, func(x, y piece) int { return x.from - y.from })
	var out []byte
	prev := 0
	for _, p := range ps {
		out = append(append(out, raw[prev:p.from]...), jsonString(p.text)...)
		prev = p.to
	}
	return append(out, raw[prev:]...)
}

// jsonString is s as a JSON string literal, <, > and & as they are.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// moveChunks moves each chunk's end to the new end of the event it falls
// in: olds and news are the events' ends before and after masking.
func moveChunks(chunks tapefmt.Chunks, olds, news []int) tapefmt.Chunks {
	if len(chunks) == 0 || slices.Equal(olds, news) {
		return chunks
	}
	out := slices.Clone(chunks)
	for i, c := range out {
		j, _ := slices.BinarySearch(olds, int(c.End))
		out[i].End = int64(news[min(j, len(news)-1)])
		if c.End == 0 {
			out[i].End = 0
		}
	}
	return out
}

// dataLine is an event's data line (after "data:") and where it starts
// in the event; nil when it has none.
func dataLine(raw []byte) ([]byte, int) {
	i := bytes.Index(raw, []byte("data:"))
	if i < 0 {
		return nil, 0
	}
	start := i + len("data:")
	end := bytes.IndexByte(raw[start:], '\n')
	if end < 0 {
		end = len(raw) - start
	}
	return raw[start : start+end], start
}

// walkStrings calls f for every string value in the JSON document doc,
// with its path and the literal's place; keys are not values. It reads
// doc as encoding/json's Decoder.Token would, a token at a time, and
// stops at the first byte that is not JSON (TestWalkStringsIsTheDecoders
// holds the two together); it runs on every event of every stream.
func walkStrings(doc []byte, f func(path string, from, to int, text string)) {
	var w jsonWalker
	w.walk(doc, func(path []byte, from, to int, text []byte) { f(string(path), from, to, string(text)) })
}

// jsonWalker walks documents one after another with the same memory.
type jsonWalker struct {
	st  jsonStack
	buf []byte
}

// walk is walkStrings without a string made for each path and value:
// path and text are good only until f returns (the path is written into
// one buffer, a plain literal's text is the document's).
func (w *jsonWalker) walk(doc []byte, f func(path []byte, from, to int, text []byte)) {
	st, buf := w.st[:0], w.buf
	defer func() { w.st, w.buf = st, buf }()
	i := 0
	expectValue := true // a value may come next (not a comma, colon or end)
	for {
		for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
			i++
		}
		if i >= len(doc) {
			return
		}
		top := st.top()
		switch c := doc[i]; {
		case c == ',' && !expectValue && top != nil:
			i++
			expectValue = true
			continue
		case c == ':' && top != nil && top.obj && top.colon:
			top.colon = false
			i++
			expectValue = true
			continue
		case (c == '}' || c == ']') && top != nil && top.obj == (c == '}') && !top.colon && (!expectValue || top.empty):
			st = st[:len(st)-1]
			i++
			expectValue = len(st) == 0 // the next document, if any
			st.next()
			continue
		case !expectValue:
			return
		case top != nil && top.obj && top.isKey && c != '"':
			return // an object's key is a string
		case top != nil && top.obj && top.colon:
			return
		}
		expectValue = false
		if top != nil {
			top.empty = false
		}
		switch c := doc[i]; {
		case c == '{' || c == '[':
			st = append(st, jsonLevel{obj: c == '{', isKey: c == '{', empty: true})
			i++
			expectValue = true
		case c == '"':
			end, text, ok := jsonLiteral(doc, i)
			if !ok {
				return
			}
			if top != nil && top.obj && top.isKey {
				top.key, top.isKey, top.colon = text, false, true
				i = end
				continue
			}
			buf = st.appendPath(buf[:0])
			f(buf, i, end, text)
			i = end
			st.next()
		default:
			end := jsonScalar(doc, i)
			if end < 0 {
				return
			}
			i = end
			st.next()
		}
		if len(st) == 0 {
			expectValue = true // the next document, as a Decoder reads on
		}
	}
}

// jsonScalar is the end of the number, true, false or null at doc[i], as
// encoding/json's scanner reads it (the longest number the grammar allows:
// at the top level "1false" is 1 and then false), or -1.
func jsonScalar(doc []byte, i int) int {
	for _, lit := range []string{"true", "false", "null"} {
		if doc[i] == lit[0] {
			if bytes.HasPrefix(doc[i:], []byte(lit)) {
				return i + len(lit)
			}
			return -1
		}
	}
	digits := func(j int) int {
		for j < len(doc) && doc[j] >= '0' && doc[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if doc[j] == '-' {
		j++
	}
	switch {
	case j < len(doc) && doc[j] == '0':
		j++
	case j < len(doc) && doc[j] >= '1' && doc[j] <= '9':
		j = digits(j)
	default:
		return -1
	}
	if j < len(doc) && doc[j] == '.' {
		k := digits(j + 1)
		if k == j+1 {
			return -1
		}
		j = k
	}
	exp := j < len(doc) && (doc[j] == 'e' || doc[j] == 'E')
	if exp {
		j++
		if j < len(doc) && (doc[j] == '+' || doc[j] == '-') {
			j++
		}
		k := digits(j)
		if k == j {
			return -1
		}
		j = k
	}
	if exp || j-i > 300 {
		// Only an exponent, or some 300 digits, can take a number out of
		// float64's range: most are read without a parse.
		if _, err := strconv.ParseFloat(string(doc[i:j]), 64); err != nil {
			return -1 // out of float64's range: Token's error too
		}
	}
	return j
}

// jsonLiteral reads the string literal at doc[i] (a quote): its end, just
// past the closing quote, and its value as encoding/json decodes it.
func jsonLiteral(doc []byte, i int) (end int, text []byte, ok bool) {
	plain := true
	for j := i + 1; j < len(doc); j++ {
		switch c := doc[j]; {
		case c == '"':
			lit := doc[i : j+1]
			if plain {
				return j + 1, lit[1 : len(lit)-1], true
			}
			text, ok := unquote(lit[1 : len(lit)-1])
			return j + 1, text, ok
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return 0, nil, false
		case c >= 0x80:
			plain = false
		}
	}
	return 0, nil, false
}

// jsonLevel is an open object or array: its key or index now.
type jsonLevel struct {
	obj   bool
	key   []byte // a part of the document, or its decoded copy
	index int
	isKey bool // an object's next string is a key
	colon bool // an object's key was read: a colon comes next
	empty bool // nothing in it yet: it may close at once
}

// jsonStack are the open levels, outermost first.
type jsonStack []jsonLevel

func (st jsonStack) top() *jsonLevel {
	if len(st) == 0 {
		return nil
	}
	return &st[len(st)-1]
}

// next moves past a value: an object expects a key, an array its next
// index.
func (st jsonStack) next() {
	if top := st.top(); top != nil {
		top.isKey = top.obj
		if !top.obj {
			top.index++
		}
	}
}

// path names the place now: keys and indexes joined with dots.
func (st jsonStack) path() string { return string(st.appendPath(nil)) }

// appendPath appends the path to buf.
func (st jsonStack) appendPath(buf []byte) []byte {
	for i, l := range st {
		if i > 0 {
			buf = append(buf, '.')
		}
		if l.obj {
			buf = append(buf, l.key...)
		} else {
			buf = strconv.AppendInt(buf, int64(l.index), 10)
		}
	}
	return buf
}

// unquote is the text of a JSON string literal's inside, as json.Unmarshal
// decodes it (a byte that is not UTF-8, or a lone surrogate, becomes
// U+FFFD); ok is false where the literal is not valid JSON.
func unquote(s []byte) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			if r+1 >= len(s) {
				return nil, false
			}
			switch s[r+1] {
			case '"', '\\', '/':
				out = append(out, s[r+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := getu4(s[r:])
				if rr < 0 {
					return nil, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					if rr1 := getu4(s[r:]); rr1 >= 0 {
						if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
							out = utf8.AppendRune(out, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, rr)
				continue
			default:
				return nil, false
			}
			r += 2
		case c == '"' || c < ' ':
			return nil, false
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			out = utf8.AppendRune(out, rr)
			r += size
		}
	}
	return out, true
}

// getu4 is the rune of the \uXXXX at the start of s, or -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
