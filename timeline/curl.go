package timeline

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// credentialHeaders carry a key: a curl command names the provider's
// environment variable instead of what the tape kept (masked, if at all).
var credentialHeaders = map[string]string{"Authorization": "Bearer", "X-Api-Key": "", "Api-Key": "", "X-Goog-Api-Key": ""}

// keyEnv is the environment variable a provider's key is in.
var keyEnv = map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY",
	"mistral": "MISTRAL_API_KEY", "groq": "GROQ_API_KEY", "xai": "XAI_API_KEY", "deepseek": "DEEPSEEK_API_KEY"}

// keyHeader is the header a provider takes its key in: the tape keeps no
// credential header, not even its name (a recording drops them), so the
// command adds it. Providers whose requests are signed (bedrock, vertex)
// or need none (ollama) have none here.
var keyHeader = map[string]string{"anthropic": "X-Api-Key", "azure-openai": "Api-Key", "gemini": "X-Goog-Api-Key",
	"openai": "Authorization", "mistral": "Authorization", "cohere": "Authorization", "openrouter": "Authorization",
	"groq": "Authorization", "together": "Authorization", "fireworks": "Authorization", "deepseek": "Authorization", "xai": "Authorization"}

// writeKey writes the header k with the key of provider's environment
// variable ($OPENAI_API_KEY and the like), never a value from the tape.
func writeKey(b *strings.Builder, k, provider string) {
	env := keyEnv[provider]
	if env == "" {
		env = strings.ToUpper(strings.ReplaceAll(provider, "-", "_")) + "_API_KEY"
	}
	v := "$" + env
	if scheme := credentialHeaders[k]; scheme != "" {
		v = scheme + " " + v
	}
	fmt.Fprintf(b, " \\\n  -H \"%s: %s\"", k, v)
}

// dropHeaders are not worth sending again: curl sets them itself, or they
// belonged to the connection.
var dropHeaders = []string{"Content-Length", "Accept-Encoding", "Connection", "Proxy-Connection", "Host", "User-Agent", "Keep-Alive", "Te", "Transfer-Encoding"}

// Curl is the model call at frame i (its request, or its answer's
// request) as a curl command a shell runs: the method, the URL it went to
// (the host the agent asked for, else its provider's recorded upstream),
// its headers but the connection's, its key from the provider's
// environment variable ($OPENAI_API_KEY and the like) rather than the
// tape, and its body, decoded, on standard input.
func (tl *Timeline) Curl(i int) (string, error) {
	d, err := tl.Detail(i)
	if err != nil {
		return "", err
	}
	if d.Call == nil || d.Call.Request < 0 {
		return "", fmt.Errorf("frame %d is no model call", i)
	}
	f, err := tl.t.Frame(d.Call.Request)
	if err != nil {
		return "", err
	}
	p, err := f.Decode()
	if err != nil {
		return "", err
	}
	req, ok := p.(*tapefmt.LLMRequest)
	if !ok {
		return "", fmt.Errorf("frame %d is no request", d.Call.Request)
	}
	base := ""
	if req.Host != "" {
		base = req.Scheme + "://" + req.Host
	} else if rs := tl.Start(); rs != nil {
		base = strings.TrimRight(rs.Upstream[req.Provider], "/")
		// An OpenAI-style base holds the API's prefix the path repeats.
		if strings.HasSuffix(base, "/v1") && strings.HasPrefix(req.Path, "/v1/") {
			base = strings.TrimSuffix(base, "/v1")
		}
	}
	if base == "" {
		return "", fmt.Errorf("frame %d: where the call went is not on the tape", d.Call.Request)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "curl -sS -X %s %s", termtext.ShellQuote(req.Method), termtext.ShellQuote(base+req.Path))
	h := http.Header(req.Header)
	keyed := false
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(dropHeaders, ck) {
			continue
		}
		if _, cred := credentialHeaders[ck]; cred {
			keyed = true
			writeKey(&b, ck, req.Provider)
			continue
		}
		for _, v := range h[k] {
			fmt.Fprintf(&b, " \\\n  -H %s", termtext.ShellQuote(ck+": "+v))
		}
	}
	if k, ok := keyHeader[req.Provider]; ok && !keyed {
		writeKey(&b, k, req.Provider)
	}
	if req.Body.IsZero() {
		return b.String() + "\n", nil
	}
	raw, err := tl.t.Blob(req.Body)
	if err != nil {
		return "", err
	}
	body := string(llmwire.DecodeBody(req.Header, raw).Text)
	delim := "JUKEBOX_BODY"
	for strings.Contains(body, delim) {
		delim += "_"
	}
	fmt.Fprintf(&b, " \\\n  --data-binary @- <<'%s'\n%s\n%s\n", delim, strings.TrimRight(body, "\n"), delim)
	return b.String(), nil
}
