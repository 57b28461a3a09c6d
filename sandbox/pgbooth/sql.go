package pgbooth

import (
	"fmt"
	"strings"
)

// This file reads just enough SQL to keep a client inside the booth's
// transaction: where one statement of a simple Query ends and the next
// begins, and what the first words of a statement make it (BEGIN, COMMIT,
// a savepoint command, one of the statements the booth refuses).
//
// It need not be a parser. Every statement reaches the server alone, in a
// Parse message, and the server refuses a Parse that holds more than one
// command ("cannot insert multiple commands into a prepared statement"),
// so a split this file gets wrong fails as an error, never as a COMMIT the
// booth did not see. The classification reads only a statement's leading
// words, after whitespace and comments, which is where PostgreSQL decides
// what a statement is.

type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // an unquoted identifier or keyword
	tQIdent         // a quoted identifier ("..." or U&"...")
	tString         // any string constant, dollar-quoted ones included
	tSemi
	tOpen
	tClose
	tOther // numbers, operators, parameters
)

type token struct {
	kind       tokKind
	start, end int
}

// lexer follows PostgreSQL's scanner (scan.l) for the token boundaries
// that matter here. scs is standard_conforming_strings: off, a backslash
// escapes a quote inside '...'.
type lexer struct {
	s   string
	i   int
	scs bool
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func identStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func identCont(c byte) bool { return identStart(c) || c >= '0' && c <= '9' || c == '$' }

func (l *lexer) peek(k int) byte {
	if l.i+k < len(l.s) {
		return l.s[l.i+k]
	}
	return 0
}

// skipSpace skips whitespace, -- comments and nested /* */ comments.
func (l *lexer) skipSpace() {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case isSpace(c):
			l.i++
		case c == '-' && l.peek(1) == '-':
			for l.i < len(l.s) && l.s[l.i] != '\n' && l.s[l.i] != '\r' {
				l.i++
			}
		case c == '/' && l.peek(1) == '*':
			depth := 0
			for l.i < len(l.s) {
				if l.s[l.i] == '/' && l.peek(1) == '*' {
					depth++
					l.i += 2
				} else if l.s[l.i] == '*' && l.peek(1) == '/' {
					depth--
					l.i += 2
					if depth == 0 {
						break
					}
				} else {
					l.i++
				}
			}
		default:
			return
		}
	}
}

// str skips a quoted constant whose opening quote is at l.i.
func (l *lexer) str(quote byte, backslash bool) {
	l.i++
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case backslash && c == '\\':
			l.i += 2
		case c == quote && l.peek(1) == quote:
			l.i += 2
		case c == quote:
			l.i++
			return
		default:
			l.i++
		}
	}
	l.i = len(l.s)
}

// dollar skips a dollar-quoted string if one starts at l.i.
func (l *lexer) dollar() bool {
	j := l.i + 1
	if j < len(l.s) && identStart(l.s[j]) {
		for j++; j < len(l.s) && identCont(l.s[j]) && l.s[j] != '$'; j++ {
		}
	}
	if j >= len(l.s) || l.s[j] != '$' {
		return false
	}
	delim := l.s[l.i : j+1]
	if k := strings.Index(l.s[j+1:], delim); k >= 0 {
		l.i = j + 1 + k + len(delim)
	} else {
		l.i = len(l.s)
	}
	return true
}

func (l *lexer) next() token {
	l.skipSpace()
	start := l.i
	if l.i >= len(l.s) {
		return token{kind: tEOF, start: start, end: start}
	}
	c := l.s[l.i]
	kind := tOther
	switch {
	case c == ';':
		l.i++
		kind = tSemi
	case c == '(':
		l.i++
		kind = tOpen
	case c == ')':
		l.i++
		kind = tClose
	case c == '\'':
		l.str('\'', !l.scs)
		kind = tString
	case c == '"':
		l.str('"', false)
		kind = tQIdent
	case (c == 'e' || c == 'E') && l.peek(1) == '\'':
		l.i++
		l.str('\'', true)
		kind = tString
	case strings.IndexByte("bBxXnN", c) >= 0 && l.peek(1) == '\'':
		l.i++
		l.str('\'', !l.scs)
		kind = tString
	case (c == 'u' || c == 'U') && l.peek(1) == '&' && (l.peek(2) == '\'' || l.peek(2) == '"'):
		l.i += 2
		if l.s[l.i] == '"' {
			l.str('"', false)
			kind = tQIdent
		} else {
			l.str('\'', false)
			kind = tString
		}
	case c == '$':
		if l.dollar() {
			kind = tString
		} else {
			for l.i++; l.i < len(l.s) && l.s[l.i] >= '0' && l.s[l.i] <= '9'; l.i++ {
			}
		}
	case identStart(c):
		for l.i++; l.i < len(l.s) && identCont(l.s[l.i]); l.i++ {
		}
		kind = tIdent
	case c >= '0' && c <= '9':
		for l.i++; l.i < len(l.s) && (identCont(l.s[l.i]) || l.s[l.i] == '.') && l.s[l.i] != '$'; l.i++ {
		}
	default:
		l.i++
	}
	return token{kind: kind, start: start, end: l.i}
}

// word is t's text folded to lower case (ASCII, as PostgreSQL folds
// keywords) when t is an unquoted identifier, else "".
func (l *lexer) word(t token) string {
	if t.kind != tIdent {
		return ""
	}
	return strings.ToLower(l.s[t.start:t.end])
}

// piece is one statement of a simple Query: its text and where it starts
// in the query, for error positions.
type piece struct {
	text  string
	start int
}

// split cuts a simple Query into its statements at top-level semicolons,
// dropping empty ones. Like psql, it keeps the body of CREATE FUNCTION or
// PROCEDURE ... BEGIN ATOMIC ... END together.
func split(q string, scs bool) []piece {
	var out []piece
	l := lexer{s: q, scs: scs}
	start, any := 0, false
	parens, begins, idents := 0, 0, 0
	var first [4]byte // psql's heuristic: CREATE [OR REPLACE] FUNCTION|PROCEDURE
	for {
		t := l.next()
		if t.kind == tEOF || t.kind == tSemi && parens == 0 && begins == 0 {
			if any {
				out = append(out, piece{text: q[start:t.start], start: start})
			}
			if t.kind == tEOF {
				return out
			}
			start, any = t.end, false
			parens, begins, idents = 0, 0, 0
			first = [4]byte{}
			continue
		}
		any = true
		switch t.kind {
		case tOpen:
			parens++
		case tClose:
			if parens > 0 {
				parens--
			}
		case tIdent:
			w := l.word(t)
			switch w {
			case "create", "function", "procedure", "or", "replace":
				if idents < len(first) {
					first[idents] = w[0]
				}
			}
			idents++
			routine := first[0] == 'c' && (first[1] == 'f' || first[1] == 'p' ||
				first[1] == 'o' && first[2] == 'r' && (first[3] == 'f' || first[3] == 'p'))
			if routine && parens == 0 {
				switch {
				case w == "begin":
					begins++
				case w == "case" && begins >= 1:
					begins++
				case w == "end" && begins > 0:
					begins--
				}
			}
		}
	}
}

// kind is what a statement is to the booth.
type kind uint8

const (
	kOther     kind = iota
	kBegin          // BEGIN, START TRANSACTION
	kCommit         // COMMIT, END
	kRollback       // ROLLBACK, ABORT
	kSavepoint      // SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK TO [SAVEPOINT]
	kRefuse         // a statement the booth refuses
	kCopy           // COPY: a simple Query waits for it before sending more
	kTxMode         // SET TRANSACTION ISOLATION LEVEL / READ ONLY ...: the held transaction's mode stays
)

// stmtInfo is a classified statement.
type stmtInfo struct {
	kind  kind
	chain bool   // COMMIT/ROLLBACK AND CHAIN
	verb  string // kSavepoint: "SAVEPOINT", "RELEASE SAVEPOINT" or "ROLLBACK TO SAVEPOINT"
	name  string // kSavepoint: the savepoint's name, as PostgreSQL folds it
	why   string // kRefuse: the message
	text  string // the statement as the client sent it
}

// Messages for the statements the booth refuses.
const (
	whyTwoPhase = "jukebox booth: %s is not allowed: this session runs inside one transaction " +
		"that jukebox prepares and then commits or rolls back together with the workspace's files at the end of the run"
	whyListen = "jukebox booth: LISTEN, UNLISTEN and NOTIFY are not allowed: PostgreSQL cannot PREPARE " +
		"a transaction that used them, so the run's SQL could not be committed"
	whyTemp = "jukebox booth: temporary tables, views and sequences are not allowed: PostgreSQL cannot PREPARE " +
		"a transaction that used temporary objects, so the run's SQL could not be committed; use a regular table"
	whyOwnSavepoint = "jukebox booth: savepoint names starting with jukebox_ belong to the booth"
)

// classify reads the leading words of one statement.
func classify(text string, scs bool) stmtInfo {
	l := lexer{s: text, scs: scs}
	t := l.next()
	w0 := l.word(t)
	next := func() (token, string) { t := l.next(); return t, l.word(t) }
	// txEnd reads [WORK|TRANSACTION] [AND [NO] CHAIN] after COMMIT and
	// the like, and returns the first word it did not take.
	txEnd := func(k kind) stmtInfo {
		_, w := next()
		if w == "work" || w == "transaction" {
			_, w = next()
		}
		info := stmtInfo{kind: k}
		if w == "and" {
			_, w = next()
			info.chain = w == "chain"
		}
		return info
	}
	savepointName := func(t token) string {
		switch t.kind {
		case tIdent:
			return strings.ToLower(text[t.start:t.end])
		case tQIdent:
			s := text[t.start:t.end]
			if strings.HasPrefix(s, `"`) && len(s) >= 2 {
				return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
			}
			return s
		}
		return ""
	}
	switch w0 {
	case "begin":
		return stmtInfo{kind: kBegin}
	case "start":
		if _, w := next(); w == "transaction" {
			return stmtInfo{kind: kBegin}
		}
	case "commit":
		save := l.i
		if _, w := next(); w == "prepared" {
			return stmtInfo{kind: kRefuse, why: fmt.Sprintf(whyTwoPhase, "COMMIT PREPARED")}
		}
		l.i = save
		return txEnd(kCommit)
	case "end":
		return txEnd(kCommit)
	case "abort":
		return txEnd(kRollback)
	case "rollback":
		save := l.i
		t, w := next()
		if w == "work" || w == "transaction" {
			t, w = next()
		}
		switch w {
		case "prepared":
			return stmtInfo{kind: kRefuse, why: fmt.Sprintf(whyTwoPhase, "ROLLBACK PREPARED")}
		case "to":
			t, w = next()
			if w == "savepoint" {
				t, _ = next()
			}
			return stmtInfo{kind: kSavepoint, verb: "ROLLBACK TO SAVEPOINT", name: savepointName(t)}
		}
		_ = t
		l.i = save
		return txEnd(kRollback)
	case "savepoint":
		t, _ := next()
		return stmtInfo{kind: kSavepoint, verb: "SAVEPOINT", name: savepointName(t)}
	case "release":
		t, w := next()
		if w == "savepoint" {
			t, _ = next()
		}
		return stmtInfo{kind: kSavepoint, verb: "RELEASE SAVEPOINT", name: savepointName(t)}
	case "prepare":
		// PREPARE TRANSACTION 'gid'; PREPARE name AS ... is an ordinary
		// prepared statement, even one named "transaction".
		if _, w := next(); w == "transaction" {
			if t, w := next(); w != "as" && t.kind != tOpen {
				return stmtInfo{kind: kRefuse, why: fmt.Sprintf(whyTwoPhase, "PREPARE TRANSACTION")}
			}
		}
	case "listen", "unlisten", "notify":
		return stmtInfo{kind: kRefuse, why: whyListen}
	case "create":
	words:
		for {
			switch _, w := next(); w {
			case "or", "replace", "global", "local":
			case "temp", "temporary":
				return stmtInfo{kind: kRefuse, why: whyTemp}
			default:
				break words
			}
		}
	case "copy":
		return stmtInfo{kind: kCopy}
	case "set":
		if _, w := next(); w == "transaction" {
			if _, w := next(); w != "snapshot" {
				return stmtInfo{kind: kTxMode}
			}
		}
	}
	return stmtInfo{kind: kOther}
}
