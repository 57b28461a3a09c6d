// Package termtext makes text from a tape or an agent safe to print on a
// terminal. Everything jukebox shows was written by a model, an agent or
// a server, so none of it may drive the terminal (escape sequences, C1
// controls), reorder what a person reads (bidi overrides and isolates)
// or hide part of itself (zero-width and other invisible characters).
//
// It is one rule with two renderings: Sanitize, for text read as text
// (model output, a frame's payload), shows each such character as a
// picture (ESC as ␛) or as �; Quote and Escape, for names a person
// decides on (paths of a change set, a tool's name), write Go escapes, so
// the exact bytes can be read back.
//
// It is a leaf: it imports only the standard library.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hidden reports whether r is a character that must not reach a terminal
// as it is in any text: a control character (C0, DEL, C1), a format
// character (bidi controls, zero-width spaces and joiners, the byte-order
// mark, soft hyphen: Unicode's Cf), a line or paragraph separator, or
// another default-ignorable code point (fillers that print as nothing).
func hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point)
}

// plain reports whether a non-ASCII rune may stand as it is in a quoted
// name: visible, not hidden, not a space other than ASCII's (U+00A0 would
// pass for a space), not a variation selector, not the braille blank
// (it prints as nothing).
func plain(r rune) bool {
	return unicode.IsPrint(r) && r != 0x2800 && !hidden(r) &&
		!unicode.In(r, unicode.Zs, unicode.Variation_Selector)
}

// Sanitize returns s as text to show: newlines are kept and tabs become
// one space; other C0 controls become their Unicode pictures (ESC as ␛,
// DEL as ␡); C1 controls, bidi controls (U+202A-U+202E, U+2066-U+2069,
// U+200E, U+200F, U+061C), invisible characters (zero-width spaces and
// joiners, U+2060, U+FEFF, fillers such as U+3164) and bytes that are not
// UTF-8 become �. Letters of any script, emoji with their variation
// selectors and spaces such as U+00A0 are kept, and so is a zero-width
// joiner between two emoji (👨‍👩‍👧, a family): it is part of the emoji,
// not hidden text, and Uniform measures such a sequence conservatively
// (as its members side by side). So are the tag characters of a
// subdivision flag after its 🏴 (Uniform shows the 🏴 alone).
func Sanitize(s string) string {
	if strings.Contains(s, "\u200d") || strings.Contains(s, "\xf3\xa0\x80") || strings.Contains(s, "\xf3\xa0\x81") {
		return sanitizeJoined(s)
	}
	return sanitize(s)
}

// sanitizeJoined is Sanitize of a text that holds a zero-width joiner or
// tag characters: kept inside an emoji, else shown as any hidden
// character is.
func sanitizeJoined(s string) string {
	var b strings.Builder
	prev := rune(0)
	for i, r := range s {
		if r >= 0xE0020 && r <= 0xE007F && (prev == 0x1F3F4 || prev >= 0xE0020 && prev <= 0xE007F) {
			b.WriteRune(r)
			prev = r
			continue
		}
		if r == 0x200D {
			next, _ := utf8.DecodeRuneInString(s[i+len("\u200d"):])
			if emoji(prev) && emoji(next) {
				b.WriteRune(r)
				prev = r
				continue
			}
		}
		b.WriteString(sanitize(string(r)))
		prev = r
	}
	return b.String()
}

// emoji reports whether r is a pictograph an emoji sequence joins, or
// the modifier or variation selector that may end one of its members.
func emoji(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF || r >= 0x2300 && r <= 0x23FF ||
		r >= 0x2190 && r <= 0x21FF || r >= 0x2B00 && r <= 0x2BFF || r == 0xFE0F || r == 0x2640 || r == 0x2642
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune { // s itself when nothing changes
		switch {
		case r >= ' ' && r < 0x7f, r == '\n':
			return r
		case r == '\t':
			return ' '
		case r < ' ':
			return 0x2400 + r
		case r == 0x7f:
			return '␡'
		case hidden(r):
			return utf8.RuneError
		}
		return r
	}, s)
}

// Quote returns a name as it can be printed: as it is when every byte is
// printable ASCII other than space, '"' and '\', otherwise in double
// quotes with Go escapes (like strconv.Quote), where also every hidden
// character (see Sanitize), every space other than ASCII's, every
// variation selector and every byte that is not UTF-8 is escaped.
// Printable non-ASCII letters are kept as they are, in the quotes, which
// mark the name as unusual.
func Quote(p string) string {
	bare := p != ""
	for i := 0; i < len(p) && bare; i++ {
		c := p[i]
		bare = c > ' ' && c < 0x7f && c != '"' && c != '\\'
	}
	if bare {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	escapeTo(&b, p, true)
	b.WriteByte('"')
	return b.String()
}

// Escape returns s with every character Quote would escape escaped the
// same way, without quotes: for messages (a refusal's reason) that may
// hold a name.
func Escape(s string) string {
	var b strings.Builder
	escapeTo(&b, s, false)
	return b.String()
}

// escapeTo writes s to b with Go escapes for what must not reach a
// terminal, and for '"' and '\' when quoted.
func escapeTo(b *strings.Builder, p string, quoted bool) {
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, p[i])
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case !plain(r) && r > 0xffff:
			fmt.Fprintf(b, `\U%08x`, r)
		case !plain(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
}

// Count is n and the word for it: "1 change", "3 changes"; one and many
// are the singular and the plural ("1 more line", "2 more lines").
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// ShellQuote quotes s as one word of a shell command line that a person
// may paste: as it is when it holds only letters, digits and
// -_./:= (a path, a URL, a method), else in single quotes (a single
// quote in it ends them, is escaped, and opens them again). A word that
// holds what must not reach a terminal (hidden: an escape sequence, a
// bidi control) or bytes that are not UTF-8 is quoted as $'...' (bash,
// zsh, ksh), those written byte by byte as \xHH: the word stays the same,
// nothing of it acts on the terminal.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=") == "" {
		return s
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, hidden) >= 0 {
		return ansiC(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiC is s quoted as bash's $'...', every hidden character and byte
// that is not UTF-8 escaped.
func ansiC(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case hidden(r):
			// Its UTF-8 bytes, which bash reads alike in every locale
			// (\u is the locale's, and takes four digits at most).
			for j := range size {
				fmt.Fprintf(&b, `\x%02x`, s[i+j])
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}
