package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// tagAgent makes one chat call with curl to the base URL jukebox gives it.
var tagAgent = []string{"--", "sh", "-c", `curl -sS -X POST "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' ` +
	`-d '{"model":"demo-large","messages":[{"role":"user","content":"hi"}]}' >/dev/null && echo done`}

// TestRunTags (issue 35 item 6): record --tag and JUKEBOX_TAGS label the
// run (a flag wins for its key), run.start carries the user and the
// folder's git commit and branch, ls shows and filters by tags (text and
// --json), a fork keeps its parent's tags and adds its own, and a bad tag
// is a usage error naming where it came from.
func TestRunTags(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "feature/x"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	head, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	env := []string{"JUKEBOX_TAGS=team=search, env=ci"}
	up := "openai=" + srv.OpenAIBaseURL()
	tape := filepath.Join(dir, "tagged.jbx")
	if _, errs, code := jbIn(dir, env, append([]string{"record", "--upstream", up, "--tag", "ticket=AB-12", "--tag", "env=local", "--tag", "note=a, b", "-o", tape}, tagAgent...)...); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	if _, errs, code := jbIn(dir, nil, append([]string{"record", "--upstream", up, "-o", filepath.Join(dir, "plain.jbx")}, tagAgent...)...); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	start, err := engine.FirstRunStart(openTape(t, tape))
	must(t, err)
	if got := tagText(start.Tags); got != "env=local,note=a, b,team=search,ticket=AB-12" {
		t.Errorf("run.start tags %q", got)
	}
	if start.User == "" || start.Git == nil || start.Git.Commit != strings.TrimSpace(string(head)) || start.Git.Branch != "feature/x" {
		t.Errorf("run.start user %q git %+v, want the commit %s on feature/x", start.User, start.Git, head)
	}

	out, errs, code := jbIn(dir, nil, "ls", ".")
	if code != 0 || !strings.Contains(out, "TAGS") || !strings.Contains(out, "env=local,note=a, b,team=search,ticket=AB-12") {
		t.Errorf("ls: exit %d, no TAGS column\n%s%s", code, out, errs)
	}
	for _, c := range []struct {
		filter []string
		want   []string
	}{
		{[]string{"--tag", "team"}, []string{"tagged"}},
		{[]string{"--tag", "env=local", "--tag", "ticket=AB-12"}, []string{"tagged"}},
		{[]string{"--tag", "env=ci"}, nil}, // the flag won over JUKEBOX_TAGS
		{[]string{"--tag", "team=search", "--tag", "nope"}, nil},
	} {
		out, errs, code := jbIn(dir, nil, append([]string{"ls", ".", "--json"}, c.filter...)...)
		var rows []struct {
			Tape string
			Tags map[string]string
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("ls --json %v: exit %d, %v\n%s%s", c.filter, code, err, out, errs)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Tape)
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("ls %v: %v, want %v", c.filter, got, c.want)
		}
	}
	if out, _, _ := jbIn(dir, nil, "ls", ".", "--tag", "env=ci"); !strings.Contains(out, "no tapes tagged env=ci in .") {
		t.Errorf("ls with a tag no run has:\n%s", out)
	}

	out, errs, code = jbIn(dir, nil, "export", "har", tape)
	var har struct {
		Log struct {
			Pages []struct {
				Jukebox struct {
					Tags map[string]string
					User string
				} `json:"_jukebox"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &har); err != nil || code != 0 || len(har.Log.Pages) != 1 || har.Log.Pages[0].Jukebox.Tags["ticket"] != "AB-12" || har.Log.Pages[0].Jukebox.User != start.User {
		t.Errorf("export har: exit %d, %v, the page's _jukebox %+v\n%s", code, err, har.Log.Pages, errs)
	}

	fork := filepath.Join(dir, "fork.jbx")
	if _, errs, code := jbIn(dir, nil, append([]string{"fork", "--no-booth", "--frame", "1", "--upstream", up, "--tag", "probe=1", "-o", fork, tape}, tagAgent...)...); code != 0 {
		t.Fatalf("fork: exit %d\n%s", code, errs)
	}
	fs, err := engine.FirstRunStart(openTape(t, fork))
	must(t, err)
	if got := tagText(fs.Tags); got != "env=local,note=a, b,probe=1,team=search,ticket=AB-12" {
		t.Errorf("the fork's tags %q, want its parent's and its own", got)
	}

	for _, bad := range []struct {
		args []string
		env  string
		name string
	}{
		{[]string{"--tag", "bad key=1"}, "", `--tag "bad key=1"`},
		{[]string{"--tag", "novalue"}, "", `--tag "novalue"`},
		{[]string{"--tag", "k=a\x1b[8mb"}, "", `--tag`},
		{nil, "JUKEBOX_TAGS=ok=1,=empty", `JUKEBOX_TAGS "=empty"`},
	} {
		var env []string
		if bad.env != "" {
			env = []string{bad.env}
		}
		_, errs, code := jbIn(dir, env, append(append([]string{"record"}, bad.args...), "--", "true")...)
		if code != ExitUsage || !strings.Contains(errs, bad.name) {
			t.Errorf("record %v %s: exit %d, want %d naming %s\n%s", bad.args, bad.env, code, ExitUsage, bad.name, errs)
		}
	}
}

// TestParseTag: what a key and a value may hold.
func TestParseTag(t *testing.T) {
	for kv, ok := range map[string]bool{
		"a=b": true, "team.name/sub:x-y_z=": true, "k=with spaces, and ünïcode": true,
		"=v": false, "k": false, "k y=1": false, "ключ=1": false, "k=\u202e": false,
		strings.Repeat("k", 65) + "=1": false, "k=" + strings.Repeat("v", 257): false,
	} {
		if _, _, err := parseTag(kv); (err == nil) != ok {
			t.Errorf("parseTag(%q): %v, want ok %v", kv, err, ok)
		}
	}
	if !(tagFilter{"a", "b=2"}).match(map[string]string{"a": "", "b": "2"}) || (tagFilter{"b=3"}).match(map[string]string{"b": "2"}) {
		t.Error("tagFilter")
	}
}

// TestForkTakesTheRecordedUpstream (issue 33 item 11): a tape recorded
// against a local model forks against it when no upstream is given and it
// answers (it went to the public API before), and fork says so.
func TestForkTakesTheRecordedUpstream(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	tape, fork := filepath.Join(dir, "run.jbx"), filepath.Join(dir, "fork.jbx")
	if _, errs, code := jbIn(dir, nil, append([]string{"record", "--upstream", "openai=" + srv.OpenAIBaseURL(), "-o", tape}, tagAgent...)...); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	out, errs, code := jbIn(dir, []string{"OPENAI_BASE_URL="}, "fork", "--no-booth", "--frame", "1", "--model", "demo-small", "--json", "-o", fork, tape)
	var rows []struct {
		UpstreamFromTape map[string]string `json:"upstream_from_tape"`
		End              struct {
			ExitCode int `json:"exit_code"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 1 || rows[0].End.ExitCode != 0 ||
		rows[0].UpstreamFromTape["openai"] != srv.OpenAIBaseURL() {
		t.Fatalf("fork without --upstream: exit %d, %v, %+v\n%s", code, err, rows, errs)
	}
	if !strings.Contains(errs, "the upstream the tape was recorded against") {
		t.Errorf("fork does not say where its live calls went:\n%s", errs)
	}
}
