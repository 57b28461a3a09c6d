package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRedactFlags: --redact and --redact-file mask the agent's output on
// the tape; a pattern that does not compile is exit 2 naming it; a replay
// of a command whose arguments lost a secret says to give the command.
func TestRedactFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.txt")
	must(t, os.WriteFile(file, []byte("# card numbers\n\n4111(-\\d{4}){3}\n"), 0o600))
	tape := filepath.Join(dir, "r.jbx")
	script := "echo card $CARD; echo code $PLANT"
	t.Setenv("PLANT", "ZX-PLANT-9")
	t.Setenv("CARD", "4111-1111-1111-1111")
	out, _ := wantCode(t, ExitOK, "record", "-o", tape, "--redact", `ZX-PLANT-\d`, "--redact-file", file, "--", "sh", "-c", script)
	if !strings.Contains(out, "card 4111-1111-1111-1111") {
		t.Fatalf("the agent's own output was masked: %q", out)
	}
	tapetest.NoSecrets(t, tape, "ZX-PLANT-9", "4111-1111-1111-1111")
	// Nothing in the command matched: it replays as recorded, its output
	// compared masked.
	out, _ = wantCode(t, ExitOK, "replay", "--strict", tape)
	if !strings.Contains(out, "code ZX-PLANT-9") {
		t.Errorf("replay: %q", out)
	}

	_, errs := wantCode(t, ExitUsage, "record", "-o", filepath.Join(dir, "bad.jbx"), "--redact", "(", "--", "true")
	if !strings.Contains(errs, `--redact pattern "("`) {
		t.Errorf("a bad pattern: %q", errs)
	}

	masked := filepath.Join(dir, "m.jbx")
	wantCode(t, ExitOK, "record", "-o", masked, "--", "sh", "-c", "echo hi", "--api-key", "sk-123")
	_, errs = wantCode(t, ExitUsage, "replay", masked)
	if !strings.Contains(errs, "give the command after --") {
		t.Errorf("replay of a redacted command: %q", errs)
	}
	wantCode(t, ExitOK, "replay", masked, "--", "sh", "-c", "echo hi")
}

// TestRedactCredentialForms plants each credential form that reached the
// tape before (issue 31) in a shell script, its output and the
// environment, and scans the raw tape, its decoded blobs and frames, and
// the JSON and HAR exports.
func TestRedactCredentialForms(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "c.jbx")
	secrets := []string{"MYSQLPW5501", "PHRASE5502", "URLTOKEN5503abc", "URLPASS5504", "sk-proj-AbCdEf0123456789AbCdEf0123456789",
		"ghp_0123456789abcdefABCDEF0123456789abcd", "AWSSECRET5507", "COOKIE5508", "JSONKEY5509", "AGENTCRED5510", "OPTSKEY5511",
		"abcdef0123456789abcdef0123456789"}
	script := `: mysql -uroot -pMYSQLPW5501 shop; : gpg --passphrase=PHRASE5502 -d f.gpg
: git clone https://URLTOKEN5503abc@github.com/o/r; : git clone https://bob:URLPASS5504@github.com/o/r
: agent sk-proj-AbCdEf0123456789AbCdEf0123456789 ghp_0123456789abcdefABCDEF0123456789abcd
: aws configure set aws_secret_access_key AWSSECRET5507
cd "$WORKDIR"; printf '%s\n' '{"api_key": "JSONKEY5509", "model": "gpt-4o"}' > cfg.json; cat cfg.json
printf 'Cookie: sessionid=COOKIE5508\n'; echo "the password policy says rotate"`
	t.Setenv("WORKDIR", dir)
	t.Setenv("AGENT_CRED", "AGENTCRED5510")
	t.Setenv("AGENT_OPTS", "--api-key OPTSKEY5511 --verbose")
	t.Setenv("SENTRY_DSN", "https://abcdef0123456789abcdef0123456789@o1.ingest.sentry.io/1")
	out, _ := wantCode(t, ExitOK, "record", "-o", tape, "--", "sh", "-c", script)
	if !strings.Contains(out, "COOKIE5508") {
		t.Fatalf("the agent's own output was masked: %q", out)
	}
	tapetest.NoSecrets(t, tape, secrets...)
	raw, err := os.ReadFile(tape)
	must(t, err)
	js, _ := wantCode(t, ExitOK, "export", "json", tape)
	har, _ := wantCode(t, ExitOK, "export", "har", tape)
	for name, b := range map[string]string{"tape": string(raw), "json": js, "har": har} {
		for _, s := range secrets {
			if strings.Contains(b, s) {
				t.Errorf("%s is in the %s export", s, name)
			}
		}
	}
	if !strings.Contains(js, "the password policy says rotate") {
		t.Errorf("ordinary output was masked: the JSON export lacks it")
	}
}

// TestRedactOutputPieces: an agent that prints a secret in pieces, as a
// streamed answer's tokens come (one write each; the pauses only make
// separate reads likely), leaves no output frames that join into it: the
// tape keeps whole lines when --redact is given.
func TestRedactOutputPieces(t *testing.T) {
	tape := filepath.Join(t.TempDir(), "p.jbx")
	script := "printf 'code: SEC'; sleep 0.1; printf 'RET-PRO'; sleep 0.1; printf 'MPT-abc'; echo; echo done"
	out, _ := wantCode(t, ExitOK, "record", "-o", tape, "--redact", `SECRET-PROMPT-\w+`, "--", "sh", "-c", script)
	if !strings.Contains(out, "code: SECRET-PROMPT-abc") {
		t.Fatalf("the agent's own output: %q", out)
	}
	if got := outputFrames(t, tape); got != "code: [redacted]\ndone\n" {
		t.Errorf("the output frames say %q", got)
	}
}

// TestKnownTokenOutputPieces: without --redact, a token of a known format
// the agent prints in pieces is masked as one printed whole is: output
// was kept in lines only with patterns, and the token stayed on the tape
// in pieces (sk-, proj-, and the rest).
func TestKnownTokenOutputPieces(t *testing.T) {
	script := "printf 'key: sk-pr'; sleep 0.1; printf 'oj-AbCdEf0123456789'; sleep 0.1; printf 'AbCdEf0123456789'; echo; printf done"
	// In the booth the output passes through the sandbox's pipes, where it
	// was kept in pieces even with --redact. The last line has no end: it
	// is recorded once the streams have ended.
	for _, flags := range [][]string{nil, {"--booth", "--commit", "never"}} {
		tape := filepath.Join(t.TempDir(), "k.jbx")
		args := append(append([]string{"record", "-o", tape}, flags...), "--", "sh", "-c", script)
		wantCode(t, ExitOK, args...)
		if got := outputFrames(t, tape); got != "key: [redacted]\ndone" {
			t.Errorf("%v: the output frames say %q", flags, got)
		}
	}
}

// outputFrames is what the tape's proc.output frames hold, joined.
func outputFrames(t *testing.T, tape string) string {
	t.Helper()
	var joined strings.Builder
	for f, err := range openTape(t, tape).Frames(tapefmt.KindOutput) {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		joined.WriteString(string(p.(*tapefmt.Output).Data))
	}
	return joined.String()
}
