package pgbooth

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		sql   string
		kind  kind
		chain bool
		name  string
	}{
		{"BEGIN", kBegin, false, ""},
		{"  /* a /* nested */ comment */ begin isolation level serializable", kBegin, false, ""},
		{"-- c\nSTART TRANSACTION", kBegin, false, ""},
		{"start replication", kOther, false, ""},
		{"COMMIT", kCommit, false, ""},
		{"end work", kCommit, false, ""},
		{"commit and chain", kCommit, true, ""},
		{"COMMIT AND NO CHAIN", kCommit, false, ""},
		{"abort", kRollback, false, ""},
		{"ROLLBACK TRANSACTION AND CHAIN", kRollback, true, ""},
		{"rollback to savepoint a", kSavepoint, false, "a"},
		{"ROLLBACK WORK TO \"Jukebox_S\"", kSavepoint, false, "Jukebox_S"},
		{"release JUKEBOX_base", kSavepoint, false, "jukebox_base"},
		{"savepoint x", kSavepoint, false, "x"},
		{"PREPARE TRANSACTION 'g'", kRefuse, false, ""},
		{"prepare transaction as select 1", kOther, false, ""},
		{"PREPARE p AS SELECT 1", kOther, false, ""},
		{"COMMIT PREPARED 'g'", kRefuse, false, ""},
		{"rollback prepared 'g'", kRefuse, false, ""},
		{"LISTEN x", kRefuse, false, ""},
		{"create or replace temp view v as select 1", kRefuse, false, ""},
		{"CREATE GLOBAL TEMPORARY TABLE t ()", kRefuse, false, ""},
		{"CREATE TABLE temp (a int)", kOther, false, ""},
		{"copy t from stdin", kCopy, false, ""},
		{`"commit"`, kOther, false, ""},
		{"commitx", kOther, false, ""},
		{"SELECT 'COMMIT'", kOther, false, ""},
		{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", kTxMode, false, ""},
		{"set transaction snapshot '0001'", kOther, false, ""},
		{"SET search_path = x", kOther, false, ""},
	} {
		got := classify(c.sql, true)
		if got.kind != c.kind || got.chain != c.chain || got.name != c.name {
			t.Errorf("%q: %+v, want kind %d chain %v name %q", c.sql, got, c.kind, c.chain, c.name)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"", nil},
		{" ; ;-- only a comment\n", nil},
		{"select 1", []string{"select 1"}},
		{"a; b;", []string{"a", " b"}},
		{"select ';'; select \";\"", []string{"select ';'", " select \";\""}},
		{"select $x$ ; $x$; select $1", []string{"select $x$ ; $x$", " select $1"}},
		{"select E'\\';'; x", []string{"select E'\\';'", " x"}},
		{"select /* ; /* ; */ ; */ 1; x", []string{"select /* ; /* ; */ ; */ 1", " x"}},
		{"select (1;2); x", []string{"select (1;2)", " x"}},
		{"create function f() returns int language sql begin atomic select 1; select 2; end; select 3",
			[]string{"create function f() returns int language sql begin atomic select 1; select 2; end", " select 3"}},
		{"CREATE OR REPLACE PROCEDURE p() BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; END; x",
			[]string{"CREATE OR REPLACE PROCEDURE p() BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; END", " x"}},
		{"begin; commit", []string{"begin", " commit"}},
	} {
		var got []string
		for _, p := range split(c.q, true) {
			got = append(got, p.text)
			if c.q[p.start:p.start+len(p.text)] != p.text {
				t.Errorf("%q: piece %q not at %d", c.q, p.text, p.start)
			}
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: %q, want %q", c.q, got, c.want)
		}
	}
	// standard_conforming_strings off: a backslash escapes a quote.
	if got := split(`select 'a\'; b'; c`, false); len(got) != 2 {
		t.Errorf("scs off: %v", got)
	}
}

func TestParseOptions(t *testing.T) {
	got := parseOptions(`-c search_path=a,b --statement-timeout=5s -cwork_mem=1MB -c x=with\ space`)
	want := map[string]string{"search_path": "a,b", "statement_timeout": "5s", "work_mem": "1MB", "x": "with space"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (%v)", k, got[k], v, got)
		}
	}
}
