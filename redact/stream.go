package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
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
	events := splitEvents(data)
	if len(events) < 2 {
		masked := m.Mask(data)
		return masked, moveChunks(chunks, []int{len(data)}, []int{len(masked)})
	}
	m.maskJoined(events)
	// Where the rules find nothing in the whole body they find nothing in
	// any of its events (each is a part of it after a line's end).
	mask := m.Mask
	if !anyRule(data) {
		mask = m.maskPatterns
	}
	olds, news := make([]int, len(events)), make([]int, len(events))
	var out []byte
	oldEnd := 0
	for i, ev := range events {
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

// splitEvents cuts an SSE body after each blank line; nil when it does
// not look like server-sent events.
func splitEvents(data []byte) []event {
	if !bytes.HasPrefix(data, []byte("data:")) && !bytes.Contains(data, []byte("\ndata:")) {
		return nil
	}
	var evs []event
	start := 0
	for i := 0; i < len(data); {
		nl := bytes.IndexByte(data[i:], '\n')
		if nl < 0 {
			break
		}
		line := data[i : i+nl+1]
		i += nl + 1
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			evs = append(evs, event{raw: data[start:i]})
			start = i
		}
	}
	if start < len(data) {
		evs = append(evs, event{raw: data[start:]})
	}
	return evs
}

// maskJoined masks the joined text of each place across the events and
// sets each event's masked bytes.
func (m *Masker) maskJoined(evs []event) {
	places := map[string][]piece{}
	var order []string
	for i := range evs {
		evs[i].masked = evs[i].raw
		for path, p := range eventStrings(evs[i].raw) {
			p.event = i
			if _, ok := places[path]; !ok {
				order = append(order, path)
			}
			places[path] = append(places[path], p)
		}
	}
	edits := map[int][]piece{} // per event, the pieces to write back
	for _, path := range order {
		for _, p := range m.maskPieces(places[path]) {
			edits[p.event] = append(edits[p.event], p)
		}
	}
	for i, ps := range edits {
		evs[i].masked = rewrite(evs[i].raw, ps)
	}
}

// maskPieces masks the joined text of ps and returns the pieces whose
// text changed, each with its new text.
func (m *Masker) maskPieces(ps []piece) []piece {
	var joined strings.Builder
	for _, p := range ps {
		joined.WriteString(p.text)
	}
	whole := joined.String()
	masked := m.MaskString(whole)
	if masked == whole {
		return nil
	}
	return share(ps, whole, masked)
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

// eventStrings are the JSON string values of an event's data line, by
// their path (keys and array indexes), with where each literal is.
func eventStrings(raw []byte) map[string]piece {
	i := bytes.Index(raw, []byte("data:"))
	if i < 0 {
		return nil
	}
	start := i + len("data:")
	end := bytes.IndexByte(raw[start:], '\n')
	if end < 0 {
		end = len(raw) - start
	}
	out := map[string]piece{}
	walkStrings(raw[start:start+end], func(path string, from, to int, text string) {
		out[path] = piece{from: start + from, to: start + to, text: text}
	})
	return out
}

// walkStrings calls f for every string value in the JSON document doc,
// with its path and the literal's place; keys are not values. It reads
// doc as encoding/json's Decoder.Token would, a token at a time, and
// stops at the first byte that is not JSON (TestWalkStringsIsTheDecoders
// holds the two together); it runs on every event of every stream.
func walkStrings(doc []byte, f func(path string, from, to int, text string)) {
	var st jsonStack
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
			st = append(st, &jsonLevel{obj: c == '{', isKey: c == '{', empty: true})
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
			f(st.path(), i, end, text)
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
	if j < len(doc) && (doc[j] == 'e' || doc[j] == 'E') {
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
	if _, err := strconv.ParseFloat(string(doc[i:j]), 64); err != nil {
		return -1 // out of float64's range: Token's error too
	}
	return j
}

// jsonLiteral reads the string literal at doc[i] (a quote): its end, just
// past the closing quote, and its value as encoding/json decodes it.
func jsonLiteral(doc []byte, i int) (end int, text string, ok bool) {
	plain := true
	for j := i + 1; j < len(doc); j++ {
		switch c := doc[j]; {
		case c == '"':
			lit := doc[i : j+1]
			if plain {
				return j + 1, string(lit[1 : len(lit)-1]), true
			}
			text, ok := unquote(lit[1 : len(lit)-1])
			return j + 1, text, ok
		case c == '\\':
			plain = false
			j++
		case c < 0x20:
			return 0, "", false
		case c >= 0x80:
			plain = false
		}
	}
	return 0, "", false
}

// jsonLevel is an open object or array: its key or index now.
type jsonLevel struct {
	obj   bool
	key   string
	index int
	isKey bool // an object's next string is a key
	colon bool // an object's key was read: a colon comes next
	empty bool // nothing in it yet: it may close at once
}

// jsonStack are the open levels, outermost first.
type jsonStack []*jsonLevel

func (st jsonStack) top() *jsonLevel {
	if len(st) == 0 {
		return nil
	}
	return st[len(st)-1]
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
func (st jsonStack) path() string {
	parts := make([]string, len(st))
	for i, l := range st {
		parts[i] = l.key
		if !l.obj {
			parts[i] = strconv.Itoa(l.index)
		}
	}
	return strings.Join(parts, ".")
}

// unquote is the text of a JSON string literal's inside, as json.Unmarshal
// decodes it (a byte that is not UTF-8, or a lone surrogate, becomes
// U+FFFD); ok is false where the literal is not valid JSON.
func unquote(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			if r+1 >= len(s) {
				return "", false
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
					return "", false
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
				return "", false
			}
			r += 2
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			out = utf8.AppendRune(out, rr)
			r += size
		}
	}
	return string(out), true
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
