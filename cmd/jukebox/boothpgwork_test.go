//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// txFrame is the payload of the tape's tx.commit or tx.rollback, as JSON.
func txFrame(t *testing.T, path string, kind tapefmt.Kind) string {
	t.Helper()
	tp := openTape(t, path)
	for i := range tp.Len() {
		f, err := tp.Frame(i)
		must(t, err)
		if f.Kind == kind {
			return string(f.Payload)
		}
	}
	t.Fatalf("no %s frame on %s", kind, path)
	return ""
}

// victim makes a table for the agent to drop, and returns its name.
func (r *pgRun) victim(t *testing.T) string {
	t.Helper()
	victim := r.table + "_victim"
	if _, err := r.conn.Exec(context.Background(), "CREATE TABLE "+victim+" (a int)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+victim) })
	return victim
}

// exists reports whether table is there, as the server sees it.
func (r *pgRun) exists(t *testing.T, table string) bool {
	t.Helper()
	var n int
	if err := r.conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_catalog.pg_class WHERE relname = $1", table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// The agent's DROP TABLE is no longer committed out of sight: the listing
// shows each session's statements and tables, the DROP marked sensitive,
// and tx.commit holds them, masked by --redact like everything else.
func TestRecordBoothPGShowsSQL(t *testing.T) {
	r := newPGRun(t)
	victim := r.victim(t)
	agent := psqlAgent("INSERT INTO "+r.table+" VALUES ('sk-SECRET42')", "DROP TABLE "+victim)
	_, errs := wantCode(t, ExitOK, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn,
		"--redact", "sk-[A-Z0-9]+", "--commit", "always", "--", "sh", "-c", agent)
	for _, want := range []string{
		"and the agent's SQL (--pg), committed or rolled back with them: 1 session, 2 statements, 2 tables written; 1 sensitive (marked !)",
		"! DROP TABLE " + victim + "   -- DROP TABLE\n    ^ sensitive: drops a table",
		"    INSERT INTO " + r.table + " VALUES ('sk-SECRET42')   -- INSERT 0 1",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("the listing lacks %q:\n%s", want, errs)
		}
	}
	commit := txFrame(t, r.tape, tapefmt.KindTxCommit)
	for _, want := range []string{`"sql":"DROP TABLE ` + victim + `"`, `"sensitive":["drops a table"]`, `VALUES ('[redacted]')`, `"tables":["` + r.table + `","` + victim + `"]`} {
		if !strings.Contains(commit, want) {
			t.Errorf("tx.commit lacks %s: %s", want, commit)
		}
	}
	if strings.Contains(commit, "SECRET42") {
		t.Errorf("tx.commit holds the secret --redact masks: %s", commit)
	}
	if show, _ := wantCode(t, ExitOK, "show", r.tape); !strings.Contains(show, "1 change, 2 SQL statements (1 sensitive)") {
		t.Errorf("show:\n%s", show)
	}
}

// The question shows the SQL with the files, the DROP marked; a "n"
// rolls both back, and tx.rollback lists what was rolled back.
func TestRecordBoothPGAsksSQL(t *testing.T) {
	r := newPGRun(t)
	victim := r.victim(t)
	cmd := jukeboxCmd(t.Context(), r.ws, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn,
		"--commit", "ask", "--", "sh", "-c", psqlAgent("DROP TABLE "+victim))
	q, out := answerAsk(t, cmd, "n\n")
	for _, want := range []string{"! DROP TABLE " + victim, "^ sensitive: drops a table", "1 of the SQL statements are destructive (marked !)",
		"and the SQL to the database? To say yes, type the code"} {
		if !strings.Contains(q, want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}
	if !r.exists(t, victim) {
		t.Fatalf("%s gone after n\n%s", victim, out)
	}
	if rb := txFrame(t, r.tape, tapefmt.KindTxRollback); !strings.Contains(rb, `"sql":"DROP TABLE `+victim+`"`) {
		t.Errorf("tx.rollback: %s", rb)
	}
}

// jukebox killed before the decision: the server rolls the SQL back, so
// booth commit refuses the files alone, booth diff says what was lost
// (--json too), and booth rollback discards the files.
func TestRecordBoothPGCrashBeforeDecision(t *testing.T) {
	r := newPGRun(t)
	agent := psqlAgent("INSERT INTO "+r.table+" VALUES ('lost')") + " && echo ready && sleep 600"
	cmd := jukeboxCmd(t.Context(), r.ws, "record", "-o", r.tape, "--booth", "--pg", r.dsn,
		"--commit", "on-success", "--", "sh", "-c", agent)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	timer := time.AfterFunc(60*time.Second, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "ready" {
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // jukebox and the agent die
	cmd.Wait()
	if !strings.Contains(stderr.String(), "joins the booth") {
		t.Fatalf("the run did not start:\n%s", stderr.String())
	}
	code, _, errs := jb(t, "booth", "commit", "-C", r.ws)
	if code == ExitOK || !strings.Contains(errs, "postgres-sessions") {
		t.Errorf("booth commit of the files alone: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "agent.txt")); err == nil {
		t.Fatal("agent.txt committed without the SQL")
	}
	if got := r.rows(t); got != "" {
		t.Fatalf("rows %q", got)
	}
	diff, _ := wantCode(t, ExitOK, "booth", "diff", "-C", r.ws)
	if !strings.Contains(diff, "1 write") || !strings.Contains(diff, "LOST: the postgres-sessions work") {
		t.Errorf("booth diff:\n%s", diff)
	}
	js, _ := wantCode(t, ExitOK, "booth", "diff", "-C", r.ws, "--json")
	if !strings.Contains(js, `"lost"`) || !strings.Contains(js, `"kind": "postgres-sessions"`) {
		t.Errorf("booth diff --json:\n%s", js)
	}
	if st, _ := wantCode(t, ExitOK, "booth", "status", "-C", r.ws); !strings.Contains(st, "postgres-sessions work was lost") {
		t.Errorf("booth status:\n%s", st)
	}
	wantCode(t, ExitOK, "booth", "rollback", "-C", r.ws)
}

// jukebox killed at the question: the SQL it showed is rolled back by the
// server; booth diff lists it as lost, and booth commit refuses the files.
func TestRecordBoothPGCrashAtQuestion(t *testing.T) {
	r := newPGRun(t)
	victim := r.victim(t)
	master, slave := openPTY(t)
	cmd := jukeboxCmd(t.Context(), r.ws, "record", "-o", r.tape, "--booth", "--pg", r.dsn,
		"--commit", "ask", "--", "sh", "-c", psqlAgent("DROP TABLE "+victim))
	var out strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	slave.Close() // the child's copy stays: a child killed ends the reads
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	var seen []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(seen), "[y/N]") && !askedCode.Match(seen) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("no question: %v\n%s", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if code, _, errs := jb(t, "booth", "commit", "-C", r.ws); code == ExitOK {
		t.Errorf("booth commit of the files alone succeeded\n%s", errs)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "agent.txt")); err == nil {
		t.Fatal("agent.txt committed without the SQL")
	}
	diff, _ := wantCode(t, ExitOK, "booth", "diff", "-C", r.ws)
	if !strings.Contains(diff, "! DROP TABLE "+victim) || !strings.Contains(diff, "LOST") {
		t.Errorf("booth diff:\n%s", diff)
	}
	if !r.exists(t, victim) {
		t.Fatalf("%s gone", victim)
	}
	wantCode(t, ExitOK, "booth", "rollback", "-C", r.ws)
}
