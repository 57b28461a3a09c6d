package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// The JSON results of the commands are documented in docs/json.md, one
// table per command: every key path a command prints must be there with
// its type, and every key marked "always" must be printed. A change to a
// result's shape fails here until the document says it.

// shape is one documented key: its JSON type and whether it is always
// there.
type shape struct {
	typ    string
	always bool
}

// jsonDoc reads docs/json.md: the tables under each "## `jukebox ...`"
// heading, by command ("ls", "record", ...).
func jsonDoc(t *testing.T) map[string]map[string]shape {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := map[string]map[string]shape{}
	var cmd string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "## `jukebox "); ok {
			// "ls", "ls URL" for the section of a command's other form,
			// "export otlp" for a subcommand's: the words before a flag.
			head, _, _ := strings.Cut(rest, "`")
			head, _, _ = strings.Cut(head, "--")
			cmd = strings.TrimSpace(head)
			doc[cmd] = map[string]shape{}
			continue
		}
		if _, rest, ok := strings.Cut(line, "keys of `jukebox "); ok && cmd != "" {
			// "The keys of `jukebox record --json`": that table's rows, for
			// each element when the line says "Each element".
			prefix := ""
			if strings.HasPrefix(line, "Each element") || strings.Contains(line, ". Each element") {
				prefix = "[]."
			}
			for k, v := range doc[strings.Fields(rest)[0]] {
				doc[cmd][prefix+k] = v
			}
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		if cmd == "" || len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		typ := strings.ReplaceAll(strings.TrimSpace(cells[2]), "\x00", "|")
		doc[cmd][key] = shape{typ: typ, always: strings.TrimSpace(cells[3]) == "always"}
	}
	return doc
}

// flatten lists the key paths of a decoded JSON value with their types:
// "a.b" for a key in an object, "a[].b" for a key of objects in an array;
// an array of scalars is "array"; an object whose keys are data (a type
// documented as "map") is not walked into.
func flatten(v any, path string, doc map[string]shape, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if path != "" && (path == "[]" || !strings.HasSuffix(path, "[]")) { // x[] is x's elements, documented as x
			out[path] = "object"
			if doc[path].typ == "map" {
				out[path] = "map"
				return
			}
		}
		for k, child := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(child, p, doc, out)
		}
	case []any:
		if path != "" {
			out[path] = "array"
		}
		for _, el := range x {
			if _, ok := el.(map[string]any); ok {
				flatten(el, path+"[]", doc, out)
			}
		}
	case string:
		out[path] = "string"
	case float64:
		out[path] = "number"
	case bool:
		out[path] = "boolean"
	case nil:
		out[path] = "null"
	}
}

// checkShape compares one command's output with its table.
func checkShape(t *testing.T, doc map[string]map[string]shape, cmd, out string, seen map[string]map[string]bool) {
	t.Helper()
	table, ok := doc[cmd]
	if !ok {
		t.Fatalf("docs/json.md has no section for jukebox %s", cmd)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("jukebox %s --json: not JSON: %v\n%s", cmd, err, out)
	}
	got := map[string]string{}
	flatten(v, "", table, got)
	if seen[cmd] == nil {
		seen[cmd] = map[string]bool{}
	}
	var undocumented []string
	for p, typ := range got {
		seen[cmd][p] = true
		d, ok := table[p]
		switch {
		case !ok:
			undocumented = append(undocumented, fmt.Sprintf("| `%s` | %s |", p, typ))
		case !slices.Contains(strings.Split(d.typ, "|"), typ):
			t.Errorf("jukebox %s --json: %s is %s, documented as %s", cmd, p, typ, d.typ)
		}
	}
	sort.Strings(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("jukebox %s --json prints keys docs/json.md does not document:\n%s", cmd, strings.Join(undocumented, "\n"))
	}
	for p, d := range table {
		parent := p[:max(strings.LastIndex(p, "."), strings.LastIndex(p, "[]"), 0)]
		if _, there := got[parent]; parent != "" && !there {
			continue // "always" is within its parent, when that is there
		}
		if _, ok := got[p]; d.always && !ok && p != "[]" {
			t.Errorf("jukebox %s --json: %s is documented as always there, but is missing:\n%s", cmd, p, out)
		}
	}
}

// TestJSONShapes runs every command with --json on tapes that bring out
// their optional keys and checks each result against docs/json.md.
func TestJSONShapes(t *testing.T) {
	doc := jsonDoc(t)
	seen := map[string]map[string]bool{}
	dir := sampleTapes(t)
	os.WriteFile(filepath.Join(dir, "junk.jbx"), []byte("not a tape"), 0o644)

	out, _ := wantCode(t, ExitBadTape, "ls", "--json", dir) // junk.jbx does not read
	checkShape(t, doc, "ls", out, seen)
	rulesTape := filepath.Join(dir, "agent-run.jbx")
	side := sidecar.Dir(rulesTape)
	must(t, os.MkdirAll(side, 0o755))
	must(t, os.WriteFile(filepath.Join(side, reqmatch.FileName), []byte(`{"ignore": ["messages"], "scrub": [{"pattern": "x"}]}`), 0o644))
	out, _ = wantCode(t, ExitOK, "rules", "--json", "--clear", rulesTape)
	checkShape(t, doc, "rules", out, seen)
	for _, by := range []string{"model", "agent", "step"} {
		out, _ = wantCode(t, ExitOK, "cost", "--json", "--by", by, filepath.Join(dir, "agent-run.jbx"))
		checkShape(t, doc, "cost", out, seen)
	}
	code, out, _ := jb(t, "verify", "--json", filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "tampered.jbx"),
		filepath.Join(dir, "torn.jbx"), filepath.Join(dir, "sealed.jbx"))
	if code != ExitBadTape {
		t.Fatalf("verify of a tampered tape: exit %d", code)
	}
	checkShape(t, doc, "verify", out, seen)
	sealed := filepath.Join(t.TempDir(), "sealed.jbx")
	b, err := os.ReadFile(filepath.Join(dir, "agent-run.jbx"))
	must(t, err)
	must(t, os.WriteFile(sealed, b, 0o644))
	out, _ = wantCode(t, ExitBadTape, "seal", "--json", "--key-file", filepath.Join(dir, "seal.key"), sealed, filepath.Join(dir, "torn.jbx"))
	checkShape(t, doc, "seal", out, seen)
	out, _ = wantCode(t, ExitOK, "doctor", "--json", "--dir", t.TempDir())
	checkShape(t, doc, "doctor", out, seen)

	work := t.TempDir()
	hi := filepath.Join(work, "hi.jbx")
	out, _ = wantCode(t, ExitOK, "record", "--json", "-o", hi, "--", "sh", "-c", "echo hi")
	checkShape(t, doc, "record", out, seen)
	out, _ = wantCode(t, ExitOK, "replay", "--json", hi)
	checkShape(t, doc, "replay", out, seen)
	out, _ = wantCode(t, ExitOK, "replay", "--json", "-o", filepath.Join(work, "again.jbx"), hi, "--", "sh", "-c", "echo bye")
	checkShape(t, doc, "replay", out, seen)
	out, _ = wantCode(t, ExitOK, "diff", "--json", hi, filepath.Join(work, "again.jbx"))
	checkShape(t, doc, "diff", out, seen)
	if boothSupported() == nil {
		t.Chdir(t.TempDir())
		out, _ = wantCode(t, ExitRefused, "record", "--json", "--booth", "--commit", "never", "-o", filepath.Join(work, "booth.jbx"),
			"--", "sh", "-c", "echo x > f; mkfifo p; ln -s f l")
		checkShape(t, doc, "record", out, seen)
		// Nothing staged: the changes are [] (they were null).
		out, _ = wantCode(t, ExitOK, "record", "--json", "--booth", "--commit", "never", "-o", filepath.Join(work, "none.jbx"), "--", "true")
		checkShape(t, doc, "record", out, seen)
		if !strings.Contains(out, `"changes": []`) {
			t.Errorf("record --booth of a run that staged nothing:\n%s", out)
		}
		// A transaction kept open: booth status and diff.
		t.Chdir(t.TempDir())
		wantCode(t, ExitOK, "record", "--booth", "--keep", "-o", filepath.Join(work, "kept.jbx"), "--", "sh", "-c", "echo kept > k.txt")
		out, _ = wantCode(t, ExitOK, "booth", "status", "--json")
		checkShape(t, doc, "booth status", out, seen)
		out, _ = wantCode(t, ExitOK, "booth", "diff", "--json")
		checkShape(t, doc, "booth diff", out, seen)
		wantCode(t, ExitOK, "booth", "rollback")
		out, _ = wantCode(t, ExitOK, "checkout", "--json", filepath.Join(work, "booth.jbx"), "--frame", "4", filepath.Join(work, "out"))
		checkShape(t, doc, "checkout", out, seen)
	}

	// A store in a folder: push (one tape up, one noted before) and pull.
	store := "file://" + t.TempDir() + "/"
	wantCode(t, ExitOK, "push", hi, "--store", store)
	out, _ = wantCode(t, ExitOK, "push", "--json", "--store", store, hi, filepath.Join(work, "again.jbx"))
	checkShape(t, doc, "push", out, seen)
	var pushed []struct{ Uploaded, Skipped any }
	json.Unmarshal([]byte(out), &pushed)
	if len(pushed) != 2 || pushed[0].Skipped == nil || pushed[1].Uploaded == nil {
		t.Errorf("push --json: %s", out)
	}
	out, _ = wantCode(t, ExitOK, "pull", "--json", store, "-o", t.TempDir())
	checkShape(t, doc, "pull", out, seen)
	out, _ = wantCode(t, ExitOK, "ls", "--json", store)
	checkShape(t, doc, "ls URL", out, seen)
	out, _ = wantCode(t, ExitOK, "reindex", "--json", store)
	checkShape(t, doc, "reindex", out, seen)

	// The tape tools: show (a frame a line, each payload as FORMAT.md
	// gives its kind), recover, export parquet.
	out, _ = wantCode(t, ExitOK, "show", "--json", "--blobs", filepath.Join(dir, "agent-run.jbx"))
	for line := range strings.Lines(out) {
		var f map[string]any
		must(t, json.Unmarshal([]byte(line), &f))
		if _, ok := f["payload"].(map[string]any); ok {
			f["payload"] = map[string]any{} // its keys are FORMAT.md's
		}
		b, _ := json.Marshal(f)
		checkShape(t, doc, "show", string(b), seen)
	}
	out, _ = wantCode(t, ExitOK, "recover", "--json", filepath.Join(dir, "torn.jbx"), "-o", filepath.Join(work, "recovered.jbx"))
	checkShape(t, doc, "recover", out, seen)
	out, _ = wantCode(t, ExitOK, "export", "parquet", "--json", filepath.Join(dir, "agent-run.jbx"), "-o", filepath.Join(work, "tables"))
	checkShape(t, doc, "export parquet", out, seen)

	// A run with model calls: the demo, a replay that diverges, a fork.
	py := testenv.RequirePython(t)
	out, _ = wantCode(t, ExitOK, "demo", "--no-play", "--json", "--dir", work)
	checkShape(t, doc, "demo", out, seen)
	var demo struct{ Tape string }
	json.Unmarshal([]byte(out), &demo)
	t.Setenv("AGENT_MODEL", "demo-small") // the recording asked demo-large: the replay diverges
	code, out, _ = jb(t, "replay", "--json", demo.Tape)
	if code != ExitDiverged {
		t.Fatalf("replay of the demo tape with another model: exit %d\n%s", code, out)
	}
	checkShape(t, doc, "replay", out, seen)
	t.Setenv("AGENT_MODEL", "demo-large")
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out, _ = wantCode(t, ExitOK, "fork", "--json", "--no-booth", "--frame", "1", "--model", "demo-small",
		"--upstream", "openai="+srv.OpenAIBaseURL(), "-o", filepath.Join(work, "fork.jbx"), demo.Tape)
	checkShape(t, doc, "fork", out, seen)
	// An upstream that is not there: the live call fails, and the result
	// and a note say so (the fork's agent went on with an error before).
	_, out, errs := jb(t, "fork", "--json", "--no-booth", "--frame", "1", "--upstream", "openai=http://127.0.0.1:1/v1",
		"-o", filepath.Join(work, "dead.jbx"), demo.Tape)
	checkShape(t, doc, "fork", out, seen)
	// --upstream was given: the hint asks whether it is up (it said to give one).
	if !strings.Contains(out, `"live_failed": 1`) || !strings.Contains(errs, "1 live call never reached an upstream") ||
		!strings.Contains(errs, "is that upstream up?") {
		t.Errorf("a fork whose upstream is down:\n%s\n%s", out, errs)
	}
	// A fork given no --upstream takes the one the tape recorded (it said
	// so in a key json.md did not list), and pack makes it whole.
	live := filepath.Join(work, "live.jbx")
	wantCode(t, ExitOK, "record", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", live, "--", py, "-c", oneCallAgent)
	out, _ = wantCode(t, ExitOK, "fork", "--json", "--no-booth", "--frame", "1", "--model", "demo-small", "-o", filepath.Join(work, "live-fork.jbx"), live)
	checkShape(t, doc, "fork", out, seen)
	if !strings.Contains(out, `"upstream_from_tape"`) {
		t.Errorf("a fork given no --upstream:\n%s", out)
	}
	out, _ = wantCode(t, ExitOK, "pack", "--json", filepath.Join(work, "live-fork.jbx"), "-o", filepath.Join(work, "packed.jbx"))
	checkShape(t, doc, "pack", out, seen)
}
