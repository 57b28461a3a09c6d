package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// The tape commands (ls, show, verify, seal) driven through run() with
// captured writers, over copies of the sample tapes in testdata/tapes.

// sampleTapes copies every file of testdata/tapes into a fresh folder.
func sampleTapes(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "tapes")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jb runs the CLI and returns its exit code, stdout and stderr.
func jb(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")})
	return code, out.String(), errb.String()
}

// jukeboxBin is the jukebox the tests start as a process: the binary
// .ci/test built (JUKEBOX_BIN_DIR; a race-instrumented test binary starts
// several times slower, and the tests start hundreds), else this test
// binary, which runs jukebox's main when mainEnv is set.
func jukeboxBin() string {
	if dir := os.Getenv(testenv.EnvBinDir); dir != "" {
		return filepath.Join(dir, "jukebox")
	}
	return os.Args[0]
}

// jukeboxCmd is jukebox (jukeboxBin) running with args in dir.
func jukeboxCmd(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, jukeboxBin(), args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Dir = dir
	return cmd
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails the test unless the command exited with want.
func wantCode(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	code, out, errs := jb(t, args...)
	if code != want {
		t.Fatalf("jukebox %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

// openTape opens a tape with the codec, to compare the CLI's figures with.
func openTape(t *testing.T, path string) *tapefmt.Tape {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

func writeKey(t *testing.T, dir, name, key string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLsText: ls lists every tape, and one that is not a tape as
// unreadable, and exits 3 for it (docs/exit-codes.md) naming it on
// stderr, after listing the others; it exited 0.
func TestLsText(t *testing.T) {
	dir := sampleTapes(t)
	if err := os.WriteFile(filepath.Join(dir, "junk.jbx"), []byte("not a tape at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs := wantCode(t, ExitBadTape, "ls", dir)
	if !strings.Contains(errs, "1 of 5 tapes do not read: "+filepath.Join(dir, "junk.jbx")) {
		t.Errorf("ls does not name the tape that does not read: %q", errs)
	}
	rows := map[string]string{}
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if i == 0 {
			for _, col := range []string{"TAPE", "STARTED", "DURATION", "FRAMES", "STEPS", "TOKENS", "COST", "EXIT", "PARENT"} {
				if !strings.Contains(line, col) {
					t.Errorf("header %q lacks column %s", line, col)
				}
			}
			continue
		}
		rows[strings.Fields(line)[0]] = line
	}
	for _, name := range []string{"agent-run", "sealed", "tampered", "torn", "junk"} {
		if rows[name] == "" {
			t.Errorf("ls does not list %s.jbx:\n%s", name, out)
		}
	}
	whole := openTape(t, filepath.Join(dir, "agent-run.jbx"))
	want := []string{strconv.Itoa(whole.Len()), strconv.Itoa(whole.Steps())}
	if f := strings.Fields(rows["agent-run"]); len(f) < 6 || !slices.Equal(f[4:6], want) {
		t.Errorf("agent-run row %q: want frames and steps %v", rows["agent-run"], want)
	}
	if !strings.Contains(rows["torn"], "(torn)") {
		t.Errorf("torn row does not say it is torn: %q", rows["torn"])
	}
	if !strings.Contains(rows["junk"], "unreadable") {
		t.Errorf("junk row does not say it is unreadable: %q", rows["junk"])
	}
}

func TestLsJSON(t *testing.T) {
	dir := sampleTapes(t)
	out, _ := wantCode(t, ExitOK, "ls", "--json", dir)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("ls --json is not a JSON array: %v\n%s", err, out)
	}
	byName := map[string]map[string]any{}
	for _, r := range rows {
		path, _ := r["path"].(string)
		byName[strings.TrimSuffix(filepath.Base(path), ".jbx")] = r
	}
	if len(byName) != 4 {
		t.Fatalf("ls --json lists %d tapes, want 4: %v", len(byName), slices.Sorted(maps.Keys(byName)))
	}
	torn := openTape(t, filepath.Join(dir, "torn.jbx"))
	if byName["torn"]["recovered"] == nil {
		t.Errorf("torn tape has no recovery in ls --json: %v", byName["torn"])
	}
	if got := byName["torn"]["frames"]; got != float64(torn.Len()) {
		t.Errorf("torn frames = %v, want %d (kept up to the last whole step)", got, torn.Len())
	}
	if byName["sealed"]["sealed"] != true || byName["agent-run"]["sealed"] != false {
		t.Errorf("sealed flags: sealed.jbx %v, agent-run.jbx %v", byName["sealed"]["sealed"], byName["agent-run"]["sealed"])
	}
	if byName["agent-run"]["recovered"] != nil || byName["agent-run"]["error"] != nil {
		t.Errorf("agent-run.jbx should be whole: %v", byName["agent-run"])
	}
}

// TestLsMissingFolder: a folder or tape that is not there is a bad
// argument, exit 2 from ls, export and push as from the commands that take
// one tape (show, cost, verify); ls and export parquet said 1.
func TestLsMissingFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-folder")
	out, errs := wantCode(t, ExitUsage, "ls", missing)
	if out != "" || !strings.Contains(errs, "no folder") || !strings.Contains(errs, missing) {
		t.Errorf("ls of a missing folder: stdout %q, stderr %q", out, errs)
	}
	tape := filepath.Join(t.TempDir(), "gone.jbx")
	for _, args := range [][]string{
		{"ls", tape}, {"ls", "-r", tape}, {"export", "parquet", tape, "-o", t.TempDir()},
		{"export", "otlp", tape, "--endpoint", "http://127.0.0.1:4318"}, {"push", tape, "--store", "file://" + t.TempDir() + "/"},
		{"show", tape}, {"cost", tape}, {"verify", tape},
	} {
		if _, errs := wantCode(t, ExitUsage, args...); !strings.Contains(errs, tape) {
			t.Errorf("jukebox %s does not name the missing tape: %q", strings.Join(args, " "), errs)
		}
	}
}

// TestLsTapes: ls takes tapes as well as folders (a shell glob such as
// tapes/agent-*.jbx), and lists the tapes named, not "no tapes in".
func TestLsTapes(t *testing.T) {
	dir := sampleTapes(t)
	out, _ := wantCode(t, ExitOK, "ls", filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "torn.jbx"))
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// The header, a row per tape, and under the table why torn.jbx is DAMAGED.
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "agent-run ") || !strings.HasPrefix(lines[2], "torn ") ||
		!strings.HasPrefix(lines[3], "DAMAGED "+filepath.Join(dir, "torn.jbx")) {
		t.Errorf("ls of two tapes:\n%s", out)
	}
}

func TestShowText(t *testing.T) {
	dir := sampleTapes(t)
	path := filepath.Join(dir, "agent-run.jbx")
	out, errs := wantCode(t, ExitOK, "show", path)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if n := openTape(t, path).Len(); len(lines) != n {
		t.Errorf("show printed %d lines, want one per frame (%d)", len(lines), n)
	}
	for _, k := range []string{"run.start", "llm.request", "llm.response", "proc.output", "step.commit", "run.end"} {
		if !strings.Contains(out, k) {
			t.Errorf("show output lacks a %s frame", k)
		}
	}
	if errs != "" {
		t.Errorf("show of a whole tape wrote to stderr: %q", errs)
	}
	_, errs = wantCode(t, ExitOK, "show", filepath.Join(dir, "torn.jbx"))
	if !strings.Contains(errs, "warning") || !strings.Contains(errs, "dropped") {
		t.Errorf("show of a torn tape does not warn: %q", errs)
	}
}

// frameLine is what a --json line must hold.
type frameLine struct {
	Seq     *uint64                    `json:"seq"`
	Kind    *string                    `json:"kind"`
	Time    *float64                   `json:"time"`
	Payload map[string]json.RawMessage `json:"payload"`
	Blobs   map[string]string          `json:"blobs"`
	Error   string                     `json:"error"`
}

// jsonLines parses show --json output, one object per line.
func jsonLines(t *testing.T, out string) []frameLine {
	t.Helper()
	var frames []frameLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var f frameLine
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line is not a JSON object: %v\n%s", err, sc.Text())
		}
		if f.Seq == nil || f.Kind == nil || f.Time == nil || f.Payload == nil && f.Error == "" {
			t.Fatalf("line lacks seq, kind, time or payload (null only with an error): %s", sc.Text())
		}
		frames = append(frames, f)
	}
	return frames
}

func TestShowJSON(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "show", "--json", path)
	tp := openTape(t, path)
	frames := jsonLines(t, out)
	if len(frames) != tp.Len() {
		t.Fatalf("show --json printed %d frames, want %d", len(frames), tp.Len())
	}
	for i, f := range frames {
		k, at, err := tp.KindAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if *f.Seq != uint64(i) || *f.Kind != k.String() || *f.Time != at.Seconds() {
			t.Errorf("line %d: seq %d kind %s time %v, want %d %s %v", i, *f.Seq, *f.Kind, *f.Time, i, k, at.Seconds())
		}
	}
	if *frames[2].Kind != "llm.request" || string(frames[2].Payload["method"]) != `"POST"` {
		t.Errorf("frame 2 is not the decoded llm.request: %s %v", *frames[2].Kind, frames[2].Payload)
	}
	if _, ok := frames[2].Payload["header"]; !ok {
		t.Errorf("llm.request payload has no header")
	} else if strings.Contains(out, "Authorization") || strings.Contains(out, "sk-test") {
		t.Errorf("a secret reached the tape or the output")
	}
}

func TestShowKindFilter(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	count := map[string]int{}
	for f := range openTape(t, path).Frames() {
		count[f.Kind.String()]++
	}
	out, _ := wantCode(t, ExitOK, "show", "--json", "--kind", "llm.request", path)
	frames := jsonLines(t, out)
	if len(frames) != count["llm.request"] || len(frames) == 0 {
		t.Errorf("--kind llm.request printed %d frames, want %d", len(frames), count["llm.request"])
	}
	for _, f := range frames {
		if *f.Kind != "llm.request" {
			t.Errorf("--kind llm.request printed a %s frame", *f.Kind)
		}
	}
	out, _ = wantCode(t, ExitOK, "show", "--json", "--kind", "llm.request,step.commit", path)
	if n := len(jsonLines(t, out)); n != count["llm.request"]+count["step.commit"] {
		t.Errorf("--kind llm.request,step.commit printed %d frames, want %d", n, count["llm.request"]+count["step.commit"])
	}
}

// TestShowPricesAlikeFiltered: an llm.response whose answer reported no
// usage shows the same counted tokens and price whatever show prints:
// with --kind llm.response or --frame N its request was not printed, and
// the line said "?→~6 tok" with no price where show alone said
// "~20→~6 tok ~$0.00011".
func TestShowPricesAlikeFiltered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usageless.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		req, err := w.PutBlob("request", []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"count the tokens of this question, which is long enough to count"}]}`))
		if err != nil {
			return err
		}
		resp, err := w.PutBlob("response", []byte(`{"model":"gpt-4o","choices":[{"message":{"role":"assistant","content":"an answer that reports no usage"}}]}`))
		if err != nil {
			return err
		}
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o", Body: req})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Model: "gpt-4o", Body: resp})
		_, err = w.Append(0, tapefmt.RunEnd{})
		return err
	})
	must(t, err)
	tapetest.Verify(t, path)
	line := func(out string) string {
		for l := range strings.Lines(out) {
			if strings.Contains(l, "llm.response") {
				return strings.TrimSpace(l)
			}
		}
		t.Fatalf("no llm.response line:\n%s", out)
		return ""
	}
	all, _ := wantCode(t, ExitOK, "show", path)
	want := line(all)
	if !strings.Contains(want, "~$") {
		t.Fatalf("show prices no counted usage: %q", want)
	}
	for _, args := range [][]string{{"--kind", "llm.response"}, {"--frame", "2"}} {
		out, _ := wantCode(t, ExitOK, append([]string{"show", path}, args...)...)
		if got := line(out); got != want {
			t.Errorf("show %s: %q, want %q as show alone prints it", strings.Join(args, " "), got, want)
		}
	}
}

func TestShowFrame(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "show", "--frame", "3", path)
	if !strings.HasPrefix(strings.TrimSpace(out), "3 ") || !strings.Contains(out, "offset ") {
		t.Errorf("--frame 3 did not print frame 3 in full:\n%s", out)
	}
	out, _ = wantCode(t, ExitOK, "show", "--json", "--frame", "3", path)
	if frames := jsonLines(t, out); len(frames) != 1 || *frames[0].Seq != 3 {
		t.Errorf("--json --frame 3 printed %d frames: %s", len(frames), out)
	}
	out, errs := wantCode(t, ExitUsage, "show", "--frame", "99999", path)
	if out != "" || !strings.Contains(errs, "99999") || !strings.Contains(errs, "out of range") {
		t.Errorf("--frame 99999: stdout %q, stderr %q", out, errs)
	}
}

func TestShowBogusKind(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	_, errs := wantCode(t, ExitUsage, "show", "--kind", "bogus", path)
	if !strings.Contains(errs, `"bogus"`) {
		t.Errorf("--kind bogus: stderr does not name the bad kind: %q", errs)
	}
	for _, k := range tapefmt.KindNames() {
		if !strings.Contains(errs, k) {
			t.Errorf("--kind bogus: stderr does not list known kind %s: %q", k, errs)
		}
	}
}

func TestShowBlobs(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "show", "--json", "--blobs", "--kind", "llm.request", path)
	tp := openTape(t, path)
	for _, f := range jsonLines(t, out) {
		var body tapefmt.Hash
		if err := json.Unmarshal(f.Payload["body"], &body); err != nil {
			t.Fatalf("llm.request body %s: %v", f.Payload["body"], err)
		}
		want, err := tp.Blob(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Blobs[body.String()]; got != string(want) || !strings.Contains(got, `"messages"`) {
			t.Errorf("frame %d: --blobs gave %d bytes for the request body, want the %d-byte request", *f.Seq, len(got), len(want))
		}
	}
	out, _ = wantCode(t, ExitOK, "show", "--blobs", "--kind", "llm.request", path)
	if !strings.Contains(out, "blob ") || !strings.Contains(out, `"messages"`) {
		t.Errorf("show --blobs (text) does not print the request bodies:\n%.400s", out)
	}
	out, _ = wantCode(t, ExitOK, "show", "--kind", "llm.request", path)
	if strings.Contains(out, `"messages"`) {
		t.Errorf("show without --blobs printed request bodies")
	}
}

// verifyJSON is one element of verify --json.
type verifyJSON struct {
	Path     string `json:"path"`
	OK       bool   `json:"ok"`
	Sealed   bool   `json:"sealed"`
	SealOK   bool   `json:"seal_ok"`
	Error    string `json:"error"`
	ErrFrame *int64 `json:"error_frame"`
	ErrOff   *int64 `json:"error_offset"`
	Head     string `json:"chain_head"`
}

func verifyResults(t *testing.T, out string) []verifyJSON {
	t.Helper()
	var rs []verifyJSON
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("verify --json is not a JSON array: %v\n%s", err, out)
	}
	return rs
}

// nthStep returns the sequence number of the n-th step.commit frame (0-based).
func nthStep(t *testing.T, tp *tapefmt.Tape, n int) int {
	t.Helper()
	for i := range tp.Len() {
		if k, _, _ := tp.KindAt(i); k == tapefmt.KindStep {
			if n == 0 {
				return i
			}
			n--
		}
	}
	t.Fatalf("tape has too few steps")
	return -1
}

func TestVerifyGoodAndDamaged(t *testing.T) {
	dir := sampleTapes(t)
	good := filepath.Join(dir, "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "verify", good)
	if !strings.HasPrefix(out, "ok ") {
		t.Errorf("verify agent-run.jbx: %q", out)
	}

	// tampered.jbx changes a word in step 1; the chain breaks at step 1's
	// commit, frame 39 of the sample.
	breakAt := nthStep(t, openTape(t, good), 1)
	tampered := filepath.Join(dir, "tampered.jbx")
	out, _ = wantCode(t, ExitBadTape, "verify", tampered)
	if !strings.Contains(out, "FAIL") || !strings.Contains(out, "frame "+strconv.Itoa(breakAt)) || !strings.Contains(out, "chain") {
		t.Errorf("verify tampered.jbx does not name frame %d and the chain: %q", breakAt, out)
	}

	torn := filepath.Join(dir, "torn.jbx")
	rec := openTape(t, torn).Recovered()
	out, _ = wantCode(t, ExitBadTape, "verify", torn)
	for _, want := range []string{"dropped " + strconv.Itoa(rec.FramesDropped) + " frames", strconv.FormatInt(rec.BytesDropped(), 10) + " bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify torn.jbx does not say %q: %q", want, out)
		}
	}

	// A file too short to be a tape: named once ("FAIL  cut.jbx: cut.jbx: ...").
	short := filepath.Join(dir, "short.jbx")
	must(t, os.WriteFile(short, []byte("JBX too short"), 0o644))
	out, _ = wantCode(t, ExitBadTape, "verify", short)
	if strings.Count(out, "short.jbx") != 1 {
		t.Errorf("verify of a file too short names it %d times: %q", strings.Count(out, "short.jbx"), out)
	}

	out, _ = wantCode(t, ExitBadTape, "verify", "--json", good, tampered, torn)
	rs := verifyResults(t, out)
	if len(rs) != 3 || !rs[0].OK || rs[1].OK || rs[2].OK {
		t.Fatalf("verify --json results: %+v", rs)
	}
	if rs[1].ErrFrame == nil || *rs[1].ErrFrame != int64(breakAt) || rs[1].ErrOff == nil || *rs[1].ErrOff <= 0 {
		t.Errorf("tampered: error_frame %v error_offset %v, want frame %d and an offset", rs[1].ErrFrame, rs[1].ErrOff, breakAt)
	}
	if rs[2].ErrOff == nil || *rs[2].ErrOff != rec.ValidEnd {
		t.Errorf("torn: error_offset %v, want %d (end of the last whole step)", rs[2].ErrOff, rec.ValidEnd)
	}
	if rs[0].Head == "" || rs[1].Head != "" {
		t.Errorf("chain_head: whole %q, tampered %q; want the whole tape's alone", rs[0].Head, rs[1].Head)
	}
}

// TestVerifyTornChainHead: verify --json gives a torn tape the chain head
// of the frames it keeps, which verify checked: the head of the whole tape
// recover writes from it. It left chain_head out.
func TestVerifyTornChainHead(t *testing.T) {
	dir := sampleTapes(t)
	torn := filepath.Join(dir, "torn.jbx")
	out, _ := wantCode(t, ExitBadTape, "verify", "--json", "--quick", torn)
	rs := verifyResults(t, out)
	if len(rs) != 1 || rs[0].OK || rs[0].Head == "" {
		t.Fatalf("verify --json of a torn tape: %s", out)
	}
	kept := filepath.Join(dir, "kept.jbx")
	wantCode(t, ExitOK, "recover", torn, "-o", kept)
	if head := openTape(t, kept).Head().String(); rs[0].Head != head {
		t.Errorf("torn chain_head %s, want %s, the head of the tape recover writes", rs[0].Head, head)
	}
}

// TestVerifyFolder: verify takes a folder, as ls and test do (it was
// "<tapes> ...: "tapes" exists but is a directory", exit 2): every tape
// under it, with each one's verdict and the worst exit code; a folder
// with no tape is a usage error that names it.
func TestVerifyFolder(t *testing.T) {
	dir := sampleTapes(t)
	out, _ := wantCode(t, ExitBadTape, "verify", "--json", dir)
	rs := verifyResults(t, out)
	ok := map[string]bool{}
	for _, r := range rs {
		ok[filepath.Base(r.Path)] = r.OK
	}
	want := map[string]bool{"agent-run.jbx": true, "sealed.jbx": true, "tampered.jbx": false, "torn.jbx": false}
	if len(ok) != len(want) {
		t.Fatalf("verify of the folder checked %v, want %v", ok, want)
	}
	for name, w := range want {
		if ok[name] != w {
			t.Errorf("%s: ok %v, want %v", name, ok[name], w)
		}
	}
	empty := t.TempDir()
	_, errs := wantCode(t, ExitUsage, "verify", empty)
	if !strings.Contains(errs, "no tapes (*.jbx) in "+empty) {
		t.Errorf("an empty folder: %q", errs)
	}
}

func TestVerifySeal(t *testing.T) {
	dir := sampleTapes(t)
	key := filepath.Join(dir, "seal.key")
	out, _ := wantCode(t, ExitOK, "verify", "--key-file", key, filepath.Join(dir, "sealed.jbx"))
	if !strings.Contains(out, "seal ok") {
		t.Errorf("verify --key-file sealed.jbx: %q", out)
	}
	out, _ = wantCode(t, ExitSeal, "verify", "--key-file", key, filepath.Join(dir, "agent-run.jbx"))
	if !strings.Contains(out, "not sealed") {
		t.Errorf("verify --key-file agent-run.jbx: %q", out)
	}
	wrong := writeKey(t, dir, "wrong.key", "this-is-not-the-sample-key-0002")
	out, _ = wantCode(t, ExitSeal, "verify", "--key-file", wrong, filepath.Join(dir, "sealed.jbx"))
	if !strings.Contains(out, "does not match") {
		t.Errorf("verify with a wrong key: %q", out)
	}
	out, _ = wantCode(t, ExitOK, "verify", "--json", "--key-file", key, filepath.Join(dir, "sealed.jbx"))
	if rs := verifyResults(t, out); len(rs) != 1 || !rs[0].Sealed || !rs[0].SealOK {
		t.Errorf("verify --json --key-file sealed.jbx: %+v", rs)
	}
	// A damaged tape outranks a seal problem in the exit code.
	wantCode(t, ExitBadTape, "verify", "--key-file", key, filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "tampered.jbx"))
}

func TestSeal(t *testing.T) {
	dir := sampleTapes(t)
	whole, err := os.ReadFile(filepath.Join(dir, "agent-run.jbx"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "copy.jbx")
	if err := os.WriteFile(path, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	key := writeKey(t, dir, "mine.key", "a-key-for-the-seal-test-0003")
	other := writeKey(t, dir, "other.key", "a-different-key-entirely-0004")
	out, _ := wantCode(t, ExitOK, "seal", "--key-file", key, path)
	if !strings.HasPrefix(out, "sealed ") {
		t.Errorf("seal: %q", out)
	}
	wantCode(t, ExitOK, "verify", "--key-file", key, path)
	wantCode(t, ExitSeal, "verify", "--key-file", other, path)
	tapetest.Verify(t, path)
	// Sealing again with another key would lose the first seal: refused,
	// every tape checked first and none touched, unless --replace.
	second := filepath.Join(dir, "second.jbx")
	must(t, os.WriteFile(second, whole, 0o644))
	sealed, err := os.ReadFile(path)
	must(t, err)
	_, errs := wantCode(t, ExitUsage, "seal", "--key-file", other, second, path)
	if !strings.Contains(errs, path+" is sealed with another key") || !strings.Contains(errs, "--replace") {
		t.Errorf("reseal with another key: %q", errs)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, sealed) {
		t.Error("a refused reseal changed the sealed tape")
	}
	if now, _ := os.ReadFile(second); !bytes.Equal(now, whole) {
		t.Error("a refused seal sealed another tape of the same command")
	}
	wantCode(t, ExitOK, "seal", "--key-file", key, path) // the same key: the same seal
	wantCode(t, ExitOK, "verify", "--key-file", key, path)
	wantCode(t, ExitOK, "seal", "--key-file", other, "--replace", path)
	wantCode(t, ExitOK, "verify", "--key-file", other, path)
	wantCode(t, ExitSeal, "verify", "--key-file", key, path)

	for _, name := range []string{"torn.jbx", "tampered.jbx"} {
		p := filepath.Join(dir, name)
		before, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		code, _, errs := jb(t, "seal", "--key-file", key, p)
		if code == ExitOK || errs == "" {
			t.Errorf("seal %s: exit %d, stderr %q; want a failure with a message", name, code, errs)
		}
		if name == "tampered.jbx" && code != ExitBadTape {
			t.Errorf("seal tampered.jbx: exit %d, want %d", code, ExitBadTape)
		}
		after, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("a failed seal changed %s", name)
		}
	}
}

// TestExitCodesDocumented checks the exit-code table in docs/exit-codes.md
// against the Exit constants of exit.go.
// TestSealGoesOn: seal of several tapes seals every one it can and names
// each it cannot (not a tape, cut short), on stdout and in --json, then
// exits 3; it stopped at the first, leaving the tapes after it unsealed
// and unnamed.
func TestSealGoesOn(t *testing.T) {
	dir := sampleTapes(t)
	whole, err := os.ReadFile(filepath.Join(dir, "agent-run.jbx"))
	must(t, err)
	junk, cut := filepath.Join(dir, "junk.jbx"), filepath.Join(dir, "cut.jbx")
	must(t, os.WriteFile(junk, []byte("not a tape at all"), 0o644))
	must(t, os.WriteFile(cut, whole, 0o644))
	must(t, os.Truncate(cut, int64(len(whole)-100)))
	key := writeKey(t, dir, "mine.key", "a-key-for-the-seal-test-0005")
	for _, asJSON := range []bool{false, true} {
		var good []string
		for _, name := range []string{"one.jbx", "two.jbx"} {
			p := filepath.Join(t.TempDir(), name)
			must(t, os.WriteFile(p, whole, 0o644))
			good = append(good, p)
		}
		args := []string{"seal", "--key-file", key, junk, good[0], cut, good[1]}
		if asJSON {
			args = append(args, "--json")
		}
		out, errs := wantCode(t, ExitBadTape, args...)
		if !strings.Contains(errs, "2 of 4 tapes not sealed") {
			t.Errorf("seal does not count the tapes it did not seal: %q", errs)
		}
		for _, p := range good {
			wantCode(t, ExitOK, "verify", "--key-file", key, p)
		}
		if !asJSON {
			for _, p := range []string{junk, cut} {
				if !strings.Contains(out, "FAILED "+p+": ") {
					t.Errorf("seal does not name %s:\n%s", p, out)
				}
			}
			continue
		}
		var rs []struct{ Path, Seal, Error string }
		if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 4 ||
			rs[0].Error == "" || rs[1].Seal == "" || rs[2].Error == "" || rs[3].Seal == "" {
			t.Errorf("seal --json: %v\n%s", err, out)
		}
	}
}

func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "exit-codes.md"))
	if err != nil {
		t.Fatalf("docs/exit-codes.md: %v", err)
	}
	documented := readmeExitCodes(string(readme))
	if len(documented) == 0 {
		t.Fatal("docs/exit-codes.md has no exit-code table: it was moved or its format changed")
	}
	consts := exitConstants(t)
	for name, v := range consts {
		if !documented[v] {
			t.Errorf("%s = %d is not in docs/exit-codes.md's table", name, v)
		}
	}
	for v := range documented {
		if !slices.Contains(slices.Collect(maps.Values(consts)), v) {
			t.Errorf("docs/exit-codes.md documents exit code %d, which exit.go does not define", v)
		}
	}
}

// tableRow matches a markdown table row whose first cell is a number,
// optionally in backquotes.
var tableRow = regexp.MustCompile("^\\|\\s*`?(\\d{1,3})`?\\s*\\|")

// readmeExitCodes returns the codes in the first markdown table whose header
// row mentions "exit" or "code".
func readmeExitCodes(readme string) map[int]bool {
	codes := map[int]bool{}
	inTable := false
	for _, line := range strings.Split(readme, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(codes) > 0 {
				return codes
			}
			inTable = false
			continue
		}
		low := strings.ToLower(line)
		if !inTable && (strings.Contains(low, "exit") || strings.Contains(low, "code")) && !tableRow.MatchString(line) {
			inTable = true
			continue
		}
		if m := tableRow.FindStringSubmatch(line); inTable && m != nil {
			n, _ := strconv.Atoi(m[1])
			codes[n] = true
		}
	}
	return codes
}

// exitConstants reads the Exit* constants from exit.go's source, so a new
// code is caught without editing this test.
func exitConstants(t *testing.T) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "exit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != len(vs.Names) {
			return true
		}
		for i, name := range vs.Names {
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !strings.HasPrefix(name.Name, "Exit") || !ok || lit.Kind != token.INT {
				continue
			}
			v, _ := strconv.Atoi(lit.Value)
			out[name.Name] = v
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("found no Exit constants in exit.go")
	}
	return out
}
