package pgbooth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// What the agent's sessions hold for the decision, shown with the files
// (the question, the listing, booth diff) and written on the tape. The
// relay notes each statement the server completed (note), keeps it when
// its effect stays in the held transaction (fold: an exchange or block
// that committed) and forgets it when undone (drop: an error outside a
// block, ROLLBACK, a client gone mid-block). Statements that only read or
// set the session up are left out; a SELECT that calls a function (which
// may write) is kept.

// notable reports whether a completed statement belongs in the list.
func notable(text string, scs bool) bool {
	l := lexer{s: text, scs: scs}
	switch w := l.word(l.next()); w {
	case "show", "fetch", "move", "close", "deallocate", "discard", "reset", "set", "declare", "":
		return false
	case "explain":
		// EXPLAIN ANALYZE runs the statement it explains.
		return explainRuns(&l, scs)
	case "select", "values", "table":
		prev := ""
		for t := l.next(); t.kind != tEOF; t = l.next() {
			w := l.word(t)
			if w == "into" || t.kind == tOpen && prev != "" && !sqlKeywordParen[prev] {
				return true
			}
			prev = w
		}
		return false
	}
	return true
}

// explainRuns reports whether the EXPLAIN l has read the first word of
// runs a statement that belongs in the list: with ANALYZE (EXPLAIN
// ANALYZE [VERBOSE] ..., or EXPLAIN (ANALYZE[ true|on|1], ...) ...),
// the statement after its options.
func explainRuns(l *lexer, scs bool) bool {
	analyze := false
	save := l.i
	t := l.next()
	switch w := l.word(t); {
	case t.kind == tOpen:
		depth, prev := 1, ""
		for depth > 0 {
			t = l.next()
			w := l.word(t)
			switch {
			case t.kind == tEOF:
				return false
			case t.kind == tOpen:
				depth++
			case t.kind == tClose:
				depth--
			case prev == "analyze" || prev == "analyse":
				if w == "false" || w == "off" || w == "0" {
					analyze = false
				}
			}
			if w == "analyze" || w == "analyse" {
				analyze = true
			}
			prev = w
		}
	case w == "analyze" || w == "analyse":
		analyze = true
		save = l.i
		if w := l.word(l.next()); w != "verbose" {
			l.i = save
		}
	default:
		l.i = save
	}
	return analyze && notable(l.s[l.i:], scs)
}

// sqlKeywordParen are words a parenthesis follows that are not calls.
var sqlKeywordParen = map[string]bool{"in": true, "exists": true, "any": true, "all": true, "some": true,
	"values": true, "row": true, "array": true, "over": true, "filter": true, "lateral": true, "from": true,
	"join": true, "as": true, "and": true, "or": true, "not": true, "on": true, "using": true, "select": true,
	"where": true, "when": true, "then": true, "else": true, "cast": true, "coalesce": true, "case": true}

// sensitiveSQL says why a statement deserves a second look before it is
// committed: DROP, TRUNCATE, ALTER, a DELETE or UPDATE without WHERE, a
// DO block (its statements are not listed).
func sensitiveSQL(text string, scs bool) []string {
	l := lexer{s: text, scs: scs}
	first := l.next()
	w0 := l.word(first)
	obj := func() string {
		save := l.i
		defer func() { l.i = save }()
		w := l.word(l.next())
		if w == "" {
			return "an object"
		}
		return "a " + w
	}
	switch w0 {
	case "drop":
		return []string{"drops " + obj()}
	case "truncate":
		return []string{"empties a table (TRUNCATE)"}
	case "alter":
		return []string{"alters " + obj()}
	case "do":
		return []string{"a DO block runs code whose statements are not listed"}
	case "grant", "revoke", "create", "comment", "security":
		return nil
	}
	return unfiltered(&lexer{s: text, scs: scs})
}

// unfiltered finds DELETE and UPDATE without WHERE at any depth (a WITH
// query's parts included).
func unfiltered(l *lexer) []string {
	type open struct {
		verb  string
		depth int
		where bool
	}
	var stack []open
	var why []string
	depth, prev := 0, ""
	end := func(d int) {
		for len(stack) > 0 && stack[len(stack)-1].depth >= d {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !o.where {
				why = append(why, fmt.Sprintf("%ss every row (%s without WHERE)", o.verb, strings.ToUpper(o.verb)))
			}
		}
	}
	for t := l.next(); t.kind != tEOF; t = l.next() {
		w := l.word(t)
		switch {
		case t.kind == tOpen:
			depth++
		case t.kind == tClose:
			end(depth)
			depth--
		case (w == "delete" || w == "update") && !verbAfter[prev]:
			stack = append(stack, open{verb: w, depth: depth})
		case w == "where":
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i].depth == depth {
					stack[i].where = true
					break
				}
			}
		}
		if prev = w; t.kind != tIdent {
			prev = l.s[t.start:t.end]
		}
	}
	end(-1)
	return slices.Compact(why)
}

// verbAfter are words after which DELETE and UPDATE are not statements:
// ON DELETE, FOR UPDATE, DO UPDATE, THEN DELETE (MERGE), FOR NO KEY UPDATE.
var verbAfter = map[string]bool{"on": true, "for": true, "do": true, "then": true, "key": true, ",": true}

// tablesOf names the table a statement writes, as written in it: INSERT
// INTO, UPDATE, DELETE FROM, TRUNCATE, DROP TABLE, ALTER TABLE, CREATE
// TABLE, COPY ... FROM, SELECT ... INTO.
func tablesOf(text string, scs bool) []string {
	l := lexer{s: text, scs: scs}
	words := func(skip ...string) {
		for {
			save := l.i
			if !slices.Contains(skip, l.word(l.next())) {
				l.i = save
				return
			}
		}
	}
	var out []string
	name := func() {
		if n := qualified(&l); n != "" {
			out = append(out, n)
		}
	}
	switch l.word(l.next()) {
	case "insert":
		words("into")
		name()
	case "update", "copy":
		words("only")
		name()
	case "delete":
		words("from", "only")
		name()
	case "truncate", "drop", "alter", "create":
		words("table", "if", "not", "exists", "only", "unlogged", "or", "replace")
		for {
			name()
			save := l.i
			if l.next().kind != tOther || l.s[l.i-1] != ',' {
				l.i = save
				break
			}
		}
	}
	return out
}

// qualified reads a possibly schema-qualified name: a.b, "A".b.
func qualified(l *lexer) string {
	var b strings.Builder
	for {
		t := l.next()
		if t.kind != tIdent && t.kind != tQIdent {
			return b.String()
		}
		if part := l.s[t.start:t.end]; t.kind == tIdent {
			b.WriteString(strings.ToLower(part)) // as PostgreSQL folds it
		} else {
			b.WriteString(part)
		}
		save := l.i
		if nt := l.next(); nt.kind != tOther || l.s[nt.start:nt.end] != "." {
			l.i = save
			return b.String()
		}
		b.WriteByte('.')
	}
}

// note records a statement the server completed with tag, pending until
// its exchange or block ends.
func (r *relay) note(info *stmtInfo, tag string) {
	if info == nil {
		return
	}
	switch info.kind {
	case kCommit:
		if tag == "ROLLBACK" { // COMMIT of a failed block
			r.drop()
		} else {
			r.fold()
		}
	case kRollback:
		r.drop()
	case kOther, kCopy:
		if notable(info.text, r.u.scs()) {
			r.pend = append(r.pend, statement(info.text, tag, r.u.scs()))
		}
	}
}

// statement is a statement worth listing as the tape keeps it.
func statement(text, tag string, scs bool) tapefmt.SQLStatement {
	return tapefmt.SQLStatement{SQL: text, Tag: tag, Sensitive: sensitiveSQL(text, scs)}
}

// fold keeps the pending statements in the session's work.
func (r *relay) fold() {
	for _, s := range r.pend {
		r.u.kept = folded(r.u.kept, s)
	}
	r.pend = nil
}

// folded returns kept with s added at its end; a statement run again
// right after itself is counted, not repeated.
func folded(kept []tapefmt.SQLStatement, s tapefmt.SQLStatement) []tapefmt.SQLStatement {
	if n := len(kept); n > 0 && kept[n-1].SQL == s.SQL {
		k := &kept[n-1]
		k.Count, k.Tag = max(k.Count, 1)+1, s.Tag
		return kept
	}
	return append(kept, s)
}

// Keep returns kept, the statements a session holds for a decision, with
// one more it ran added, when it is one the tape lists as the booth lists
// its own sessions' (not a SELECT that writes nothing, a SET or a SHOW),
// with why it deserves a second look; tag is the server's command tag,
// scs standard_conforming_strings. A statement run again right after
// itself is counted, not repeated.
func Keep(kept []tapefmt.SQLStatement, text, tag string, scs bool) []tapefmt.SQLStatement {
	if !notable(text, scs) {
		return kept
	}
	return folded(kept, statement(text, tag, scs))
}

// Tables are the tables the statements name, sorted, each once.
func Tables(kept []tapefmt.SQLStatement, scs bool) []string {
	var tables []string
	for _, st := range kept {
		tables = append(tables, tablesOf(st.SQL, scs)...)
	}
	slices.Sort(tables)
	return slices.Compact(tables)
}

// drop forgets the pending statements: their effect was undone.
func (r *relay) drop() { r.pend = nil }

// Work is what the sessions hold for the decision, one entry per session
// that kept a statement or holds a write lock. It stops the endpoint
// first (the agent has ended): the answer does not change after.
func (s *Server) Work() Work {
	ups := s.stopped()
	locks := s.lockedTables(context.Background(), ups)
	var out Work
	for _, u := range ups {
		var tables []string
		named := map[string]bool{} // tables a sensitive statement names
		for _, st := range u.kept {
			ts := tablesOf(st.SQL, u.scs())
			tables = append(tables, ts...)
			for _, t := range ts {
				named[t] = named[t] || len(st.Sensitive) > 0
			}
		}
		var why []string
		if tl := locks[u.pid]; tl != nil {
			tables = append(tables, tl.tables...)
			why = unmarked(tl, named)
		}
		if len(u.kept) == 0 && len(tables) == 0 {
			continue
		}
		slices.Sort(tables)
		out = append(out, tapefmt.SQLSession{Session: u.n, Statements: slices.Clone(u.kept), Tables: slices.Compact(tables), Sensitive: why})
	}
	return out
}
