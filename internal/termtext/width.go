package termtext

import (
	"strings"
	"unicode/utf8"
)

// Terminals disagree on how wide an emoji sequence is: tmux draws 👍🏽
// (a thumb and a skin-tone modifier) four columns wide where grapheme
// libraries, and so a program laying out its screen, count two; a flag
// is one, two or four columns; a variation selector widens a symbol on
// some terminals and not on others. A line a program believes fits then
// wraps, and the whole screen scrolls. Uniform removes the disagreement.

// Uniform returns s in a form every common terminal draws at the same
// width: emoji skin-tone modifiers, variation selectors, zero-width
// joiners, tag characters and the combining keycap are dropped (👍🏽
// shows as 👍, a family as its members side by side), and each regional
// indicator shows as its ASCII letter (the flag 🇫🇷 as FR). Everything
// else, escape sequences included, is left as it is: s itself when
// nothing changes.
func Uniform(s string) string {
	if !needsUniform(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case disputed(r):
		case r >= 0x1F1E6 && r <= 0x1F1FF:
			b.WriteByte(byte('A' + r - 0x1F1E6))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// needsUniform reports whether s holds a rune Uniform changes, without
// allocating: most lines are ASCII.
func needsUniform(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf {
			continue
		}
		for _, r := range s[i:] {
			if disputed(r) || r >= 0x1F1E6 && r <= 0x1F1FF {
				return true
			}
		}
		return false
	}
	return false
}

// disputed reports whether r is a rune whose width terminals disagree on
// and which Uniform drops.
func disputed(r rune) bool {
	switch {
	case r >= 0x1F3FB && r <= 0x1F3FF: // skin-tone modifiers
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
	case r == 0x200D, r == 0x20E3: // zero-width joiner, combining keycap
	case r >= 0xE0000 && r <= 0xE007F: // tag characters (subdivision flags)
	default:
		return false
	}
	return true
}
