package tui

import (
	"fmt"
	"unicode/utf8"
)

// maxScreenText bounds one text the frame view lays out on screen (an
// answer, a message, a file): wrapping more would make every key slow. The
// frame keeps all of it, and o, v and w take all of it.
const maxScreenText = 1 << 20

// cutForScreen is text cut to maxScreenText bytes (at a character's
// start) and the line that says so, or text itself and "".
func cutForScreen(text string) (string, string) {
	if len(text) <= maxScreenText {
		return text, ""
	}
	n := maxScreenText
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n], fmt.Sprintf("… cut here on screen after %s of %s: o pages the whole frame, w writes it to a file",
		count(int64(n)), counted(int64(len(text)), "byte", "bytes"))
}
