package llmwire

import "strings"

// Recognized is a request that jukebox knows to be a model call: the
// provider family whose wire format its body and answer follow.
type Recognized struct {
	// Provider is the name recorded in llm.request's provider key:
	// openai, anthropic, ... An OpenAI-compatible host is "openai".
	Provider string
}

// Recognize says whether a request to host (host[:port], as the agent
// asked for it) at path is a model call, and of which provider. Every
// other request is plain HTTP (http.* frames).
func Recognize(host, path string) (Recognized, bool) {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	switch {
	case h == "api.openai.com" && strings.HasPrefix(path, "/v1/"):
		return Recognized{Provider: "openai"}, true
	case h == "api.anthropic.com" && strings.HasPrefix(path, "/v1/"):
		return Recognized{Provider: "anthropic"}, true
	}
	return Recognized{}, false
}
