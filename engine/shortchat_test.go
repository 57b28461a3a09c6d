package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// chatPlanEnv names the plan file when the test binary runs as the chat
// client (see TestMain).
const chatPlanEnv = "JUKEBOX_TEST_CHAT_PLAN"

// chatPlan is one conversation for the chat client to hold.
type chatPlan struct {
	API    string   `json:"api"` // "chat" (OpenAI chat completions) or "messages" (Anthropic)
	Stream bool     `json:"stream"`
	System string   `json:"system"`
	Turns  []string `json:"turns"`
}

// chatClient is the agent: the test binary run again with chatPlanEnv set.
// It holds the planned conversation through the provider's plain HTTP API,
// at the base URLs jukebox hands it, as a minimal agent does: each answer
// (read from the body, or assembled from the stream) goes back into the
// conversation. Every request body sent and response body received is
// saved as req-N and resp-N in the working directory, for the test to
// replay.
func chatClient() int {
	if err := holdConversation(os.Getenv(chatPlanEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "chat client:", err)
		return 1
	}
	return 0
}

func holdConversation(planPath string) error {
	raw, err := os.ReadFile(planPath)
	if err != nil {
		return err
	}
	var p chatPlan
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	url := os.Getenv("OPENAI_BASE_URL") + "/chat/completions"
	header := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + os.Getenv("OPENAI_API_KEY")}}
	var msgs []map[string]string
	if p.API == "messages" {
		url = os.Getenv("ANTHROPIC_BASE_URL") + "/v1/messages"
		header = http.Header{"Content-Type": {"application/json"}, "X-Api-Key": {os.Getenv("ANTHROPIC_API_KEY")}, "Anthropic-Version": {"2023-06-01"}}
	} else if p.System != "" {
		msgs = append(msgs, map[string]string{"role": "system", "content": p.System})
	}
	// No transparent gzip: the client keeps the bytes it was sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for i, turn := range p.Turns {
		msgs = append(msgs, map[string]string{"role": "user", "content": turn})
		req := map[string]any{"model": "demo-small", "messages": msgs}
		if p.API == "messages" {
			req["max_tokens"] = 512
			if p.System != "" {
				req["system"] = p.System
			}
		}
		if p.Stream {
			req["stream"] = true
		}
		body, _ := json.Marshal(req)
		got, err := post(client, url, header, body)
		if err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		text, err := answerText(p, got)
		if err != nil {
			return fmt.Errorf("turn %d: %w\n%s", i, err, got)
		}
		if err := errors.Join(os.WriteFile(fmt.Sprintf("req-%d", i), body, 0o644),
			os.WriteFile(fmt.Sprintf("resp-%d", i), got, 0o644)); err != nil {
			return err
		}
		fmt.Println(i, len(body), len(got), len(text))
		msgs = append(msgs, map[string]string{"role": "assistant", "content": text})
	}
	return nil
}

func post(client *http.Client, url string, header http.Header, body []byte) ([]byte, error) {
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header = header
	resp, err := client.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, got)
	}
	return got, err
}

// answerBody holds the fields of a whole answer or of one stream event
// that carry its text, for both APIs.
type answerBody struct {
	Choices []struct {
		Message struct{ Content string }
		Delta   struct{ Content string }
	}
	Content []struct{ Text string }
	Type    string
	Delta   struct{ Type, Text string }
}

// answerText is the answer's text: from a whole body, or assembled from
// the stream's text deltas.
func answerText(p chatPlan, body []byte) (string, error) {
	var text strings.Builder
	if !p.Stream {
		var a answerBody
		if err := json.Unmarshal(body, &a); err != nil {
			return "", err
		}
		for _, c := range a.Choices {
			text.WriteString(c.Message.Content)
		}
		for _, c := range a.Content {
			text.WriteString(c.Text)
		}
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !p.Stream || !ok || data == "[DONE]" {
			continue
		}
		var ev answerBody
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return "", err
		}
		for _, c := range ev.Choices {
			text.WriteString(c.Delta.Content)
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	if text.Len() == 0 {
		return "", errors.New("the answer has no text")
	}
	return text.String(), nil
}

// echoScript answers every request with the last user message, so the
// answers are as short as the prompts.
const echoScript = `{"version":1,"rules":[{"name":"echo","reply":{"text":"{{user}}"}}]}`

// shortChatLengths are the prompt lengths recorded: around the sizes where
// compressible blobs of 64-255 bytes once wrote tapes that did not read
// (tapefmt's TestBlobRoundTripEverySize stores every size up to 4,096;
// each length here is four agent runs).
var shortChatLengths = []int{1, 30, 63, 64, 65, 128, 255, 256, 257, 300}

// prompt is n characters of compressible text.
func prompt(n int, turn int) string {
	return strings.Repeat(fmt.Sprintf("la%d ", turn), n)[:n]
}

// TestShortConversationsRecordVerifyReplay records short conversations of
// every prompt length in shortChatLengths (and a three-turn conversation
// with a two-word system prompt) through the recorder, for OpenAI chat
// completions and Anthropic messages, streamed and not. Every tape must
// verify in full, and replaying its requests in process must answer each
// with the body the agent got while recording, byte for byte.
func TestShortConversationsRecordVerifyReplay(t *testing.T) {
	script, err := llmsim.ParseScript([]byte(echoScript))
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, script)
	type conv struct {
		name   string
		system string
		turns  []string
	}
	var convs []conv
	for _, n := range shortChatLengths {
		convs = append(convs, conv{name: fmt.Sprint(n), turns: []string{prompt(n, 0)}})
	}
	convs = append(convs, conv{name: "3-turn", system: "Be brief.", turns: []string{prompt(20, 0), prompt(64, 1), prompt(130, 2)}})
	for _, api := range []string{"chat", "messages"} {
		for _, stream := range []bool{false, true} {
			for _, c := range convs {
				name := fmt.Sprintf("%s/stream=%v/%s", api, stream, c.name)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					plan, _ := json.Marshal(chatPlan{API: api, Stream: stream, System: c.system, Turns: c.turns})
					recordShortChat(t, srv, api, plan, len(c.turns))
				})
			}
		}
	}
}

// recordShortChat records one conversation, verifies its tape and replays
// each of its requests in process.
func recordShortChat(t *testing.T, srv *llmsim.Server, api string, plan []byte, turns int) {
	dir := t.TempDir()
	planPath := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planPath, plan, 0o644); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := &agentRun{argv: []string{self}, dir: dir,
		env: append(cleanEnv(), chatPlanEnv+"="+planPath, "OPENAI_API_KEY="+secretKey, "ANTHROPIC_API_KEY="+secretKey)}
	tape := filepath.Join(t.TempDir(), "chat.jbx")
	if res := record(t, srv, run, tape); res.Calls != uint64(turns) {
		t.Fatalf("recorded %d calls, want %d\n%s", res.Calls, turns, run.stdout.String())
	}
	tapetest.Verify(t, tape)

	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	h, err := engine.NewReplayHandler(tp, reqmatch.Default(), 0)
	if err != nil {
		t.Fatal(err)
	}
	path := "/openai/v1/chat/completions"
	if api == "messages" {
		path = "/anthropic/v1/messages"
	}
	for i := range turns {
		req, want := readFile(t, dir, "req-%d", i), readFile(t, dir, "resp-%d", i)
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(req))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("anthropic-version", "2023-06-01")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), want) {
			t.Fatalf("turn %d (request of %d bytes): replay answered %d with %d bytes\n%q\nrecording got %d bytes\n%q",
				i, len(req), w.Code, w.Body.Len(), w.Body.Bytes(), len(want), want)
		}
	}
}

func readFile(t *testing.T, dir, format string, i int) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf(format, i)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
