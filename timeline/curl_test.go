package timeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestCurlRunsTheCall (issue 33 item 9): the call as a curl command, run
// by a shell, asks the upstream the same thing again: the scripted model
// answers it as it answered the recording; the key comes from the
// environment, never from the tape; a frame that is no call says so. A
// recording keeps no credential header, not even its name: the command
// had none, and a provider answered it 401; it names the provider's key
// header now (Anthropic's x-api-key too).
func TestCurlRunsTheCall(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := `{"model":"demo-small","messages":[{"role":"user","content":"Say hello, it's 'quoted'"}]}`
	path := filepath.Join(t.TempDir(), "call.jbx")
	err = tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Upstream: map[string]string{"openai": srv.OpenAIBaseURL()}})
		h, _ := w.PutBlob("openai /v1/chat/completions request", []byte(body))
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: h, Model: "demo-small",
			Header: map[string][]string{"Content-Type": {"application/json"}, "Content-Length": {"90"}}})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200})
		w.Append(0, tapefmt.LLMRequest{Call: 1, Provider: "anthropic", Method: "POST", Host: "api.anthropic.com", Scheme: "https", Path: "/v1/messages",
			Header: map[string][]string{"Anthropic-Version": {"2023-06-01"}}})
		w.Append(0, tapefmt.LLMResponse{Call: 1, Status: 200})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	cmd, err := tl.Curl(2) // the answer: its request is the call
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cmd, "[redacted]") || !strings.Contains(cmd, `-H "Authorization: Bearer $OPENAI_API_KEY"`) || strings.Contains(cmd, "Content-Length") {
		t.Errorf("the command's headers:\n%s", cmd)
	}
	sh := exec.Command("sh", "-c", cmd)
	sh.Env = append(sh.Environ(), "OPENAI_API_KEY=sk-test")
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"chat.completion"`) {
		t.Errorf("the command ran: %v\n%s\n%s", err, cmd, out)
	}
	if cmd, err := tl.Curl(3); err != nil || !strings.Contains(cmd, `-H "X-Api-Key: $ANTHROPIC_API_KEY"`) || strings.Contains(cmd, "Authorization") {
		t.Errorf("the Anthropic call's command: %v\n%s", err, cmd)
	}
	if _, err := tl.Curl(0); err == nil || !strings.Contains(err.Error(), "no model call") {
		t.Errorf("curl of run.start: %v", err)
	}
}

// TestCurlQuotesWhatTheTapeSays: a tape is anyone's file, and what the
// curl command takes from it (the method, the path, the headers) is
// quoted: a hostile tape's method or path run as a word, never as shell
// code, when the command is pasted.
func TestCurlQuotesWhatTheTapeSays(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hostile.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Upstream: map[string]string{"openai": "http://127.0.0.1:1/v1"}})
		h, _ := w.PutBlob("request", []byte(`{}`))
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST;touch pwned-method;#", Path: "/v1/x$(touch pwned-path)", Body: h,
			Header: map[string][]string{"X-Note": {"`touch pwned-header`"}}})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	cmd, err := tl.Curl(1)
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", cmd)
	sh.Dir = dir
	sh.CombinedOutput() // curl fails to connect: nothing listens on port 1
	for _, f := range []string{"pwned-method", "pwned-path", "pwned-header"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("pasting the curl command ran the tape's %s:\n%s", strings.TrimPrefix(f, "pwned-"), cmd)
		}
	}
}
