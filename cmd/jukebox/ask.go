package main

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/engine"
)

// termReset undoes what an agent's output may have left on the terminal
// to hide or fake the booth's question: it ends an escape sequence left
// open (CAN, then ST: an open OSC or DCS would swallow the question),
// leaves the alternate screen, soft-resets the terminal (DECSTR: insert
// and origin modes, margins, character sets), resets the graphic
// rendition (SGR 0: no concealed, invisible or reversed text), shows the
// cursor, makes the whole screen the scroll region, selects ASCII, turns
// off reverse video and resets the colour palette and the default colours.
// Resetting the scroll region sends the cursor home, where what follows
// would overwrite the screen's top lines: the cursor is saved around it
// (DECSC, DECRC). Last, a new line, and everything below it is erased, so
// nothing the agent drew further down the screen stays beside the question.
const termReset = "\x18\x1b\\\x1b[?1049l\x1b[!p\x1b[0m\x1b[?25h\x1b7\x1b[r\x1b8\x1b(B\x0f\x1b[?5l" +
	"\x1b]104\x1b\\\x1b]110\x1b\\\x1b]111\x1b\\\r\n\x1b[J"

// questionRule heads every question jukebox asks on the terminal, after
// termReset: whatever the agent printed ends above it.
const questionRule = "==== jukebox asks (this is not the agent's output) ===="

// codeAlphabet are the characters of a consent code: no 0/O, 1/I, 2/Z,
// 5/S, 8/B that read alike.
const codeAlphabet = "ACDEFGHJKLMNPQRTUVWXY3479"

// newCode is a consent code such as K7QD-X3MA, from crypto/rand: the
// agent, which ended before it was made, cannot know it.
func newCode() string {
	var b [8]byte
	for i := range b {
		b[i] = codeAlphabet[randIndex(len(codeAlphabet))]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// randIndex is a uniform random index below n.
func randIndex(n int) int {
	var b [1]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on the platforms Go supports
		}
		if int(b[0]) < 256/n*n {
			return int(b[0]) % n
		}
	}
}

// askOnTerminal asks question on the terminal itself (/dev/tty), never on
// the agent's streams, and reads the answer. What was typed before (meant
// for the agent, or queued by it) is discarded first, then the terminal
// is reset (termReset) and the question follows questionRule. With code
// "", y or yes is yes and anything else no; with a code, the code alone
// is yes, n or no is no, and anything else (a y) no decision
// (engine.ErrUndecided). The end of input is no decision; a stop signal
// on sigs (Ctrl-C, Ctrl-\, SIGTERM: main catches them) is
// engine.ErrInterrupted.
func askOnTerminal(question, code string, sigs <-chan os.Signal) (bool, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer tty.Close()
	discardInput(tty)
	if _, err := io.WriteString(tty, termReset+"\r\n"+questionRule+"\n"+question); err != nil {
		return false, err
	}
	line, err := readAnswer(tty, sigs)
	if err != nil {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	switch {
	case code == "":
		return answer == "y" || answer == "yes", nil
	case strings.EqualFold(strings.ReplaceAll(answer, "-", ""), strings.ReplaceAll(code, "-", "")):
		return true, nil
	case answer == "n" || answer == "no":
		return false, nil
	}
	io.WriteString(tty, "jukebox: that is not the code: nothing applied, nothing discarded\n")
	return false, fmt.Errorf("%w: the answer was not the code the question showed", engine.ErrUndecided)
}

// readAnswer reads a line from tty, unless its input ends or a signal
// comes on sigs first.
func readAnswer(tty *os.File, sigs <-chan os.Signal) (string, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := bufio.NewReader(tty).ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil && r.line == "" {
			return "", fmt.Errorf("%w: the terminal's input ended (%v)", engine.ErrUndecided, r.err)
		}
		return r.line, nil
	case sig := <-sigs:
		tty.SetReadDeadline(time.Now()) // the reader gives up
		fmt.Fprintln(tty)
		return "", fmt.Errorf("%w at the question (%v)", engine.ErrInterrupted, sig)
	}
}

// resetTerminal writes termReset to w when w is a terminal, so that what
// jukebox says after the agent's output shows, whatever that output left.
func resetTerminal(w io.Writer) {
	if f, ok := w.(*os.File); ok {
		if _, err := getTermState(f); err == nil {
			io.WriteString(f, termReset)
		}
	}
}
