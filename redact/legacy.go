package redact

// MaskAsBefore masks b as tapes written before fixed-length masks were
// (FORMAT.md 11.1, "fixed masks"): each match of the patterns keeps its
// length, its letters, digits and multi-byte characters becoming '*' (a
// backslash escape stays whole, so JSON stays JSON), and the credential
// rules are not applied to it. Replay matches a live request this way
// when the tape did not hold it masked the current way, so that tapes an
// earlier release wrote, with or without --redact, still replay.
func (m *Masker) MaskAsBefore(b []byte) []byte {
	var out []byte
	for _, re := range m.patterns() {
		locs := re.FindAllIndex(b, -1)
		if len(locs) == 0 {
			continue
		}
		if out == nil {
			out = append([]byte(nil), b...)
		}
		for _, l := range locs {
			maskRange(out, l[0], l[1])
		}
		b = out
	}
	return b
}

// maskRange masks b[from:to] as MaskAsBefore says.
func maskRange(b []byte, from, to int) {
	i := from
	if backslashesBefore(b, from)%2 == 1 { // a match that starts inside an escape
		i = escapeEnd(b, from-1)
	}
	for i < to {
		c := b[i]
		switch {
		case c == '\\':
			i = escapeEnd(b, i)
			continue
		case c >= 0x80, c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			b[i] = '*'
		}
		i++
	}
}
