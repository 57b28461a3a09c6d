package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// providersAgent calls Gemini (generateContent, then streamGenerateContent
// as server-sent events), a search API, and Bedrock's ConverseStream (AWS
// event-stream framing) at their public hosts, as an agent with no base
// URL setting would; the test routes the hosts to a local server.
const providersAgent = `import json, urllib.request, hashlib
def post(url, body, headers={}):
    h = {"content-type": "application/json"}
    h.update(headers)
    return urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode(), headers=h)).read()
g = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"
a = json.loads(post(g + ":generateContent", {"contents": [{"parts": [{"text": "capital of France?"}]}]}, {"x-goog-api-key": "AIza-PROVIDER-SECRET"}))
print("gemini", a["candidates"][0]["content"]["parts"][0]["text"])
s = post(g + ":streamGenerateContent?alt=sse", {"contents": [{"parts": [{"text": "and of Italy?"}]}]}, {"x-goog-api-key": "AIza-PROVIDER-SECRET"}).decode()
print("stream", "".join(json.loads(l[6:])["candidates"][0]["content"]["parts"][0]["text"] for l in s.splitlines() if l.startswith("data: ")))
print("search", urllib.request.urlopen("https://search.example/api/search?q=rome").read().decode())
b = post("https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream",
         {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, {"authorization": "AWS4-HMAC-SHA256 Credential=AKIA-PROVIDER-SECRET"})
print("bedrock", len(b), hashlib.sha256(b).hexdigest()[:16])
`

// eventMessage is one AWS event-stream message: prelude (total and
// headers length, prelude CRC32), headers (":event-type" and friends as
// strings), payload, message CRC32.
func eventMessage(eventType string, payload string) []byte {
	var h bytes.Buffer
	for _, kv := range [][2]string{{":event-type", eventType}, {":content-type", "application/json"}, {":message-type", "event"}} {
		h.WriteByte(byte(len(kv[0])))
		h.WriteString(kv[0])
		h.WriteByte(7) // string
		binary.Write(&h, binary.BigEndian, uint16(len(kv[1])))
		h.WriteString(kv[1])
	}
	total := 12 + h.Len() + len(payload) + 4
	var m bytes.Buffer
	binary.Write(&m, binary.BigEndian, uint32(total))
	binary.Write(&m, binary.BigEndian, uint32(h.Len()))
	binary.Write(&m, binary.BigEndian, crc32.ChecksumIEEE(m.Bytes()))
	m.Write(h.Bytes())
	m.WriteString(payload)
	binary.Write(&m, binary.BigEndian, crc32.ChecksumIEEE(m.Bytes()))
	return m.Bytes()
}

// providersUpstream answers as Gemini, Bedrock and a search API do.
func providersUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates":[{"content":{"parts":[{"text":"Paris."}],"role":"model"}}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9},"modelVersion":"gemini-2.0-flash"}`)
		case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
			w.Header().Set("Content-Type", "text/event-stream")
			for i, part := range []string{"Ro", "me."} {
				usage := ""
				if i == 1 {
					usage = `,"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":3,"totalTokenCount":14}`
				}
				fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":%q}],\"role\":\"model\"}}]%s}\r\n\r\n", part, usage)
				w.(http.Flusher).Flush()
			}
		case strings.HasSuffix(r.URL.Path, "/converse-stream"):
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			for _, ev := range [][2]string{
				{"messageStart", `{"role":"assistant"}`},
				{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hello"}}`},
				{"messageStop", `{"stopReason":"end_turn"}`},
				{"metadata", `{"usage":{"inputTokens":12,"outputTokens":5,"totalTokens":17},"metrics":{"latencyMs":40}}`},
			} {
				w.Write(eventMessage(ev[0], ev[1]))
				w.(http.Flusher).Flush()
			}
		case r.URL.Path == "/api/search":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"results":["jukebox"],"q":%q}`, r.URL.Query().Get("q"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestProvidersRecordAndReplay: Gemini's generateContent and its
// streamed form, a search API between model calls and a Bedrock
// ConverseStream, called at their own hosts by an agent that sets no base
// URL, are recorded as model calls of their providers with their model
// and usage (the tool call as http frames), and replay offline byte for
// byte with the upstream gone.
func TestProvidersRecordAndReplay(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv, hits := providersUpstream(t)
	routes := map[string]string{"generativelanguage.googleapis.com": srv.URL, "search.example": srv.URL,
		"bedrock-runtime.us-east-1.amazonaws.com": srv.URL}
	argv := []string{py, "-c", providersAgent}
	dir := t.TempDir()
	tape := filepath.Join(t.TempDir(), "providers.jbx")
	var out, errOut bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: cleanEnv(), Stdout: &out, Stderr: &errOut, Routes: routes},
		Tape:       tape})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, exit %d\n%s%s", err, res.End.ExitCode, out.String(), errOut.String())
	}
	for _, want := range []string{"gemini Paris.", "stream Rome.", `search {"results":["jukebox"],"q":"rome"}`, "bedrock "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the agent printed %q, without %q", out.String(), want)
		}
	}
	tapetest.Verify(t, tape)
	tapetest.NoSecrets(t, tape, "AIza-PROVIDER-SECRET", "AKIA-PROVIDER-SECRET")
	checkProviderFrames(t, tape)

	recorded := hits.Load()
	srv.Close()
	var again bytes.Buffer
	rres, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: cleanEnv(), Stdout: &again, Stderr: io.Discard, Routes: routes},
		From:       tape})
	if err != nil || rres.Divergence != nil || rres.End.ExitCode != 0 {
		t.Fatalf("replay: %v, exit %d, divergence %v", err, rres.End.ExitCode, rres.Divergence)
	}
	if again.String() != out.String() || hits.Load() != recorded {
		t.Fatalf("replay printed\n%s\nrecording printed\n%s\nupstream hits %d→%d", again.String(), out.String(), recorded, hits.Load())
	}
}

// checkProviderFrames wants the tape's requests in order, each model call
// with its provider, model and the usage its answer reported.
func checkProviderFrames(t *testing.T, tape string) {
	t.Helper()
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var got []string
	for f, err := range tp.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindHTTPRequest) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			got = append(got, fmt.Sprintf("%s %s %s", p.Provider, p.Host, p.Model))
		case *tapefmt.LLMResponse:
			got = append(got, fmt.Sprintf("usage %d/%d", p.Usage.Input, p.Usage.Output))
		case *tapefmt.HTTPRequest:
			got = append(got, "http "+p.Host+p.Path)
		}
	}
	want := []string{
		"gemini generativelanguage.googleapis.com gemini-2.0-flash", "usage 7/2",
		"gemini generativelanguage.googleapis.com gemini-2.0-flash", "usage 11/3",
		"http search.example/api/search",
		"bedrock bedrock-runtime.us-east-1.amazonaws.com anthropic.claude-3-5-sonnet-20240620-v1:0", "usage 12/5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the tape holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
