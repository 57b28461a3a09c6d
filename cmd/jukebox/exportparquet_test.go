package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// duck runs SQL with DuckDB (duckq, from the tools module) in dir and
// returns each statement's rows.
func duck(t *testing.T, dir string, sql ...string) [][]map[string]any {
	t.Helper()
	bin := testenv.RequireDuckDB(t)
	cmd := exec.Command(bin, append([]string{"-C", dir}, sql...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("duckq: %v\n%s", err, stderr)
	}
	var res [][]map[string]any
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		var rows []map[string]any
		must(t, json.Unmarshal([]byte(line), &rows))
		res = append(res, rows)
	}
	if len(res) != len(sql) {
		t.Fatalf("duckq: %d results for %d statements", len(res), len(sql))
	}
	return res
}

// parquetTapes writes a folder of tapes: the sample run, a generated run
// with tags and one of another id without, and a file that is no tape.
func parquetTapes(t *testing.T) (dir, bad string) {
	t.Helper()
	dir = t.TempDir()
	data, err := os.ReadFile(agentRunTape)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "agent-run.jbx"), data, 0o644))
	must(t, tapegen.WriteFile(filepath.Join(dir, "tagged.jbx"), tapegen.Spec{Steps: 7, Chunks: 3, Model: "gpt-4o",
		Tags: map[string]string{"team": "search", "ticket": "AB-12"}, ID: [16]byte{1, 2, 3}}))
	bad = filepath.Join(dir, "broken.jbx")
	must(t, os.WriteFile(bad, []byte("this is no tape\n"), 0o644))
	return dir, bad
}

// TestExportParquetDuckDB: DuckDB reads the export as two tables
// partitioned by date, whose numbers are ls's and cost's; a file that is
// no tape is named, skipped and fails the export after the rest is written.
func TestExportParquetDuckDB(t *testing.T) {
	testenv.RequireDuckDB(t)
	in, bad := parquetTapes(t)
	out := t.TempDir()
	notDir := filepath.Join(out, "file")
	must(t, os.WriteFile(notDir, nil, 0o644))
	if _, errs := wantCode(t, ExitUsage, "export", "parquet", in, "-o", notDir); !strings.Contains(errs, "-o "+notDir+": not a folder") {
		t.Errorf("-o a file: %q", errs)
	}
	must(t, os.Remove(notDir))
	stdout, stderr := wantCode(t, ExitBadTape, "export", "parquet", in, "-o", out, "--json")
	if !strings.Contains(stderr, bad) {
		t.Errorf("the tape that does not read is not named: %q", stderr)
	}
	var rep struct {
		Tapes  int      `json:"tapes"`
		Calls  int      `json:"call_rows"`
		Runs   int      `json:"run_rows"`
		Failed []string `json:"failed"`
		Files  []struct {
			Path string `json:"path"`
			Rows int    `json:"rows"`
		} `json:"files"`
	}
	must(t, json.Unmarshal([]byte(stdout), &rep))
	if rep.Tapes != 2 || rep.Runs != 2 || rep.Calls != 5+7 || len(rep.Failed) != 1 || rep.Failed[0] != bad {
		t.Errorf("summary: %+v", rep)
	}
	for _, f := range rep.Files {
		if !regexp.MustCompile(`^(calls|runs)/date=\d{4}-\d{2}-\d{2}/[^/]+\.parquet$`).MatchString(f.Path) {
			t.Errorf("file %s: not Hive-partitioned", f.Path)
		}
		if _, err := os.Stat(filepath.Join(out, f.Path)); err != nil {
			t.Error(err)
		}
	}

	res := duck(t, out,
		`SELECT run_name, count(*) AS calls, sum(tokens_in) AS tin, sum(tokens_out) AS tout, sum(cost_usd) AS cost,
		        count(first_chunk_ms) AS streamed, CAST(min(date) AS VARCHAR) AS day
		 FROM read_parquet('calls/*/*.parquet', hive_partitioning = true) GROUP BY tape_id, run_name ORDER BY calls`,
		`SELECT tags['team'] AS team, tags['ticket'] AS ticket, cardinality(tags) AS ntags, calls, cost_usd, exit_code
		 FROM read_parquet('runs/*/*.parquet', hive_partitioning = true) ORDER BY calls`,
		`SELECT DISTINCT unnest(tool_names) AS tool FROM read_parquet('calls/**/*.parquet')`)
	for i, tape := range []string{filepath.Join(in, "agent-run.jbx"), filepath.Join(in, "tagged.jbx")} {
		lsOut, _ := wantCode(t, ExitOK, "ls", "--json", tape)
		var ls []struct {
			Calls  float64 `json:"llm_calls"`
			Tokens struct{ Input, Output float64 }
			Cost   float64 `json:"cost_usd"`
		}
		must(t, json.Unmarshal([]byte(lsOut), &ls))
		got := res[0][i]
		if got["calls"].(float64) != ls[0].Calls || got["tin"].(float64) != ls[0].Tokens.Input ||
			got["tout"].(float64) != ls[0].Tokens.Output || math.Abs(got["cost"].(float64)-ls[0].Cost) > 1e-12 {
			t.Errorf("%s: DuckDB sums %v, ls says %+v", tape, got, ls[0])
		}
		if got["streamed"] != got["calls"] || got["day"] != "2026-12-01" {
			t.Errorf("%s: first chunks and partition: %v", tape, got)
		}
		run := res[1][i]
		if run["calls"] != got["calls"] || math.Abs(run["cost_usd"].(float64)-ls[0].Cost) > 1e-12 || run["exit_code"] != 0.0 {
			t.Errorf("%s: run row %v", tape, run)
		}
	}
	if r := res[1][0]; r["ntags"] != 0.0 || r["team"] != nil {
		t.Errorf("a run without tags: %v (want an empty map)", r)
	}
	if r := res[1][1]; r["team"] != "search" || r["ticket"] != "AB-12" || r["ntags"] != 2.0 {
		t.Errorf("the tagged run: %v", r)
	}
	if len(res[2]) != 1 || res[2][0]["tool"] != "write_file" {
		t.Errorf("tool names: %v", res[2])
	}
}

// TestExportParquetDocs runs every SQL example of docs/export.md against
// an export, as the page says to.
func TestExportParquetDocs(t *testing.T) {
	testenv.RequireDuckDB(t)
	in, bad := parquetTapes(t)
	must(t, os.Remove(bad))
	out := t.TempDir()
	wantCode(t, ExitOK, "export", "parquet", in, "-o", filepath.Join(out, "tables"))
	doc, err := os.ReadFile("../../docs/export.md")
	must(t, err)
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 3 {
		t.Fatalf("docs/export.md has %d SQL examples", len(blocks))
	}
	var sql []string
	for _, b := range blocks {
		sql = append(sql, b[1])
	}
	for i, rows := range duck(t, out, sql...) {
		if len(rows) == 0 {
			t.Errorf("docs/export.md example %d returned no rows:\n%s", i+1, sql[i])
		}
	}
}

// TestExportParquetStore: a store is read as ls lists it and written
// through its bucket, and a push writes the tape's rows beside it.
func TestExportParquetStore(t *testing.T) {
	testenv.RequireDuckDB(t)
	in, bad := parquetTapes(t)
	must(t, os.Remove(bad))
	storeDir := t.TempDir()
	store := "file://" + storeDir + "/"
	wantCode(t, ExitOK, "push", filepath.Join(in, "agent-run.jbx"), "--store", store)
	res := duck(t, storeDir, `SELECT count(*) AS n FROM read_parquet('calls/*/*.parquet', hive_partitioning = true)`,
		`SELECT count(*) AS n FROM read_parquet('runs/*/*.parquet', hive_partitioning = true)`)
	if res[0][0]["n"] != 5.0 || res[1][0]["n"] != 1.0 {
		t.Errorf("rows a push wrote: %v", res)
	}
	out := t.TempDir()
	outStore := "file://" + out + "/"
	wantCode(t, ExitOK, "export", "parquet", store, "-o", outStore)
	res = duck(t, out, `SELECT count(*) AS n, any_value(source) AS src FROM read_parquet('runs/*/*.parquet', hive_partitioning = true)`)
	if res[0][0]["n"] != 1.0 || !strings.HasPrefix(res[0][0]["src"].(string), "file://") {
		t.Errorf("export of a store into a store: %v", res)
	}
}
