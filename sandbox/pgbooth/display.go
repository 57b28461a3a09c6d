package pgbooth

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Work is the agent's database work in a booth decision (Server.Work),
// shown beside the files' change set the way it is: the agent chose every
// statement and name, so each is escaped (termtext), and a destructive
// statement is marked "!" with a line saying why, as a sensitive path is
// (sandbox.Change.Sensitive).
type Work []tapefmt.SQLSession

// Empty reports whether no session kept a statement or wrote a table.
func (w Work) Empty() bool { return len(w) == 0 }

// Statements counts the statements kept, each once however often it ran.
func (w Work) Statements() int {
	n, _ := tapefmt.SQLCount(w)
	return n
}

// Sensitive counts the statements and sessions marked sensitive.
func (w Work) Sensitive() int {
	_, n := tapefmt.SQLCount(w)
	return n
}

// Summary is the heading: "2 sessions, 5 statements, 3 tables written;
// 1 sensitive (marked !)", or "no SQL".
func (w Work) Summary() string {
	if w.Empty() {
		return "no SQL"
	}
	tables := 0
	for _, s := range w {
		tables += len(s.Tables)
	}
	out := fmt.Sprintf("%s, %s, %s written", termtext.Count(len(w), "session", "sessions"), termtext.Count(w.Statements(), "statement", "statements"), termtext.Count(tables, "table", "tables"))
	if n := w.Sensitive(); n > 0 {
		out += fmt.Sprintf("; %d sensitive (marked !)", n)
	}
	return out
}

// String lists each session, the tables it wrote, then its statements one
// per line, never truncated: white space runs flattened to one space and
// everything else a terminal could act on escaped. A sensitive statement's
// line starts with "! " and is followed by one saying why.
func (w Work) String() string {
	var b strings.Builder
	for _, s := range w {
		tables := make([]string, len(s.Tables))
		for i, t := range s.Tables {
			tables[i] = termtext.Quote(t)
		}
		named := strings.Join(tables, ", ")
		if named == "" {
			named = "none named"
		}
		if len(s.Sensitive) > 0 {
			fmt.Fprintf(&b, "! SQL session %d, tables written: %s\n    ^ sensitive: %s\n", s.Session, named, termtext.Escape(strings.Join(s.Sensitive, "; ")))
		} else {
			fmt.Fprintf(&b, "  SQL session %d, tables written: %s\n", s.Session, named)
		}
		for _, st := range s.Statements {
			line := termtext.Escape(strings.Join(strings.Fields(st.SQL), " "))
			if st.Tag != "" {
				line += "   -- " + termtext.Escape(st.Tag)
			}
			if st.Count > 1 {
				line += fmt.Sprintf(" (run %d times)", st.Count)
			}
			if len(st.Sensitive) > 0 {
				fmt.Fprintf(&b, "! %s\n    ^ sensitive: %s\n", line, termtext.Escape(strings.Join(st.Sensitive, "; ")))
				continue
			}
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return b.String()
}

// ReadWork reads Work kept as JSON (sandbox.Tx.NoteWork); nil when raw
// is empty or not Work.
func ReadWork(raw json.RawMessage) Work {
	var w Work
	if len(raw) == 0 || json.Unmarshal(raw, &w) != nil {
		return nil
	}
	return w
}
