package pgbooth

import (
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

func TestSensitiveSQL(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want string // "" for not sensitive
	}{
		{"DROP TABLE users", "drops a table"},
		{"  -- x\n drop schema s cascade", "drops a schema"},
		{"TRUNCATE users", "empties a table (TRUNCATE)"},
		{"ALTER TABLE users DROP COLUMN pw", "alters a table"},
		{"DELETE FROM users", "deletes every row (DELETE without WHERE)"},
		{"delete from users where id = 1", ""},
		{"UPDATE users SET admin = true", "updates every row (UPDATE without WHERE)"},
		{"update users set a = (select 1 where true)", "updates every row (UPDATE without WHERE)"},
		{"UPDATE users SET a = 1 WHERE id IN (SELECT id FROM b)", ""},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT count(*) FROM d", "deletes every row (DELETE without WHERE)"},
		{"INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET v = 2", ""},
		{"SELECT * FROM t FOR UPDATE", ""},
		{"CREATE TABLE c (id int REFERENCES p ON DELETE CASCADE ON UPDATE CASCADE)", ""},
		{"INSERT INTO t VALUES ('DELETE FROM x')", ""},
		{"DO $$BEGIN EXECUTE 'DROP TABLE x'; END$$", "a DO block runs code whose statements are not listed"},
	} {
		got := strings.Join(sensitiveSQL(c.sql, true), "; ")
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.sql, got, c.want)
		}
	}
}

func TestTablesOf(t *testing.T) {
	for sql, want := range map[string][]string{
		"INSERT INTO public.users VALUES (1)":           {"public.users"},
		"update only \"Users\" set a = 1":               {`"Users"`},
		"UPDATE Public.T SET a = 1":                     {"public.t"},
		"DELETE FROM t WHERE k = 1":                     {"t"},
		"TRUNCATE TABLE a, b":                           {"a", "b"},
		"DROP TABLE IF EXISTS x":                        {"x"},
		"create unlogged table if not exists n (a int)": {"n"},
		"SELECT 1": nil,
	} {
		if got := tablesOf(sql, true); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", sql, got, want)
		}
	}
}

func TestNotable(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT * FROM t WHERE k IN (1, 2)": false,
		"select k from t":                   false,
		"SHOW search_path":                  false,
		"SET search_path = x":               false,
		"SELECT wipe_everything()":          true,
		"SELECT * INTO copy FROM t":         true,
		"INSERT INTO t VALUES (1)":          true,
		"DROP TABLE t":                      true,
		// EXPLAIN ANALYZE runs what it explains: its writes were kept,
		// unlisted and unmarked.
		"EXPLAIN SELECT 1":                                       false,
		"EXPLAIN DELETE FROM logt":                               false,
		"explain analyze delete from logt":                       true,
		"EXPLAIN ANALYZE VERBOSE UPDATE t SET k = 1":             true,
		"explain (analyze, format json) update acct set bal = 0": true,
		"EXPLAIN (ANALYSE TRUE) INSERT INTO t VALUES (1)":        true,
		"EXPLAIN (ANALYZE false, COSTS off) DELETE FROM t":       false,
		"EXPLAIN (FORMAT json) DELETE FROM t":                    false,
		"EXPLAIN ANALYZE SELECT * FROM t":                        false,
		"EXPLAIN ANALYZE SELECT wipe_everything()":               true,
	} {
		if got := notable(sql, true); got != want {
			t.Errorf("%q: %v, want %v", sql, got, want)
		}
	}
	for _, sql := range []string{"explain analyze delete from logt", "explain (analyze, format json) update acct set bal = 0"} {
		if why := sensitiveSQL(sql, true); len(why) != 1 || !strings.Contains(why[0], "without WHERE") {
			t.Errorf("%q: sensitive %q", sql, why)
		}
	}
}

// The agent chose every statement and name: none reaches the terminal
// raw, and a statement's lines are flattened to one.
func TestWorkStringEscapes(t *testing.T) {
	w := Work{{Session: 1, Tables: []string{"t\u202e"}, Statements: []tapefmt.SQLStatement{
		{SQL: "DROP TABLE \"x\x1b[8m\"\n;", Tag: "DROP TABLE", Sensitive: sensitiveSQL("DROP TABLE x", true)},
		{SQL: "INSERT\tINTO t\nVALUES (1)", Tag: "INSERT 0 1", Count: 3},
	}}}
	s := w.String()
	if strings.ContainsAny(s, "\x1b\u202e") {
		t.Fatalf("raw control characters:\n%q", s)
	}
	for _, want := range []string{"! DROP TABLE", "    ^ sensitive: drops a table\n", "    INSERT INTO t VALUES (1)   -- INSERT 0 1 (run 3 times)\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
	if got := w.Summary(); got != "1 session, 2 statements, 1 table written; 1 sensitive (marked !)" {
		t.Errorf("summary %q", got)
	}
}
