package llmwire

// Which requests are model calls, by host and path (Recognize), and which
// wire format a recognised call's bodies follow (dialectOf).

import (
	"net"
	"net/url"
	"strings"
)

// Recognized is a request that jukebox knows to be a model call.
type Recognized struct {
	// Provider is the name recorded in llm.request's provider key: who
	// serves and bills the call (FORMAT.md 10.1 lists them). The wire format
	// follows from it and the path: Anthropic's Messages on Bedrock and
	// Vertex are "bedrock" and "vertex" calls.
	Provider string
	// Model is the model the path names, for the APIs whose body names none
	// (Gemini, Vertex, Bedrock, an Azure deployment); "" otherwise.
	Model string
}

// hostRule recognises the model calls to the hosts host matches: paths
// under one of prefixes (an empty list: any path).
type hostRule struct {
	provider string
	host     func(h string) bool
	prefixes []string
	model    func(path string) string // the model the path names; nil: none
}

func exact(names ...string) func(string) bool {
	return func(h string) bool {
		for _, n := range names {
			if h == n {
				return true
			}
		}
		return false
	}
}

func suffix(s string) func(string) bool {
	return func(h string) bool { return strings.HasSuffix(h, s) }
}

// openAIPaths are the OpenAI-compatible model endpoints under /v1.
var openAIPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings"}

// hostRules are checked in order; the first whose host and path match wins.
var hostRules = []hostRule{
	{"openai", exact("api.openai.com"), []string{"/v1/"}, nil},
	{"azure-openai", azureHost, []string{"/openai/deployments/", "/openai/v1/"}, azureDeployment},
	{"anthropic", exact("api.anthropic.com"), []string{"/v1/"}, nil},
	{"bedrock", bedrockHost, []string{"/model/"}, bedrockModel},
	{"vertex", suffix("aiplatform.googleapis.com"), []string{"/v1/projects/", "/v1beta1/projects/"}, vertexModel},
	{"gemini", exact("generativelanguage.googleapis.com"), []string{"/v1beta/", "/v1/", "/v1alpha/"}, geminiModel},
	{"mistral", exact("api.mistral.ai", "codestral.mistral.ai"), []string{"/v1/"}, nil},
	{"cohere", exact("api.cohere.com", "api.cohere.ai"), []string{"/v1/", "/v2/", "/compatibility/v1/"}, nil},
	{"openrouter", exact("openrouter.ai"), []string{"/api/v1/"}, nil},
	{"groq", exact("api.groq.com"), []string{"/openai/v1/"}, nil},
	{"together", exact("api.together.xyz", "api.together.ai"), []string{"/v1/"}, nil},
	{"fireworks", exact("api.fireworks.ai"), []string{"/inference/v1/"}, nil},
	{"deepseek", exact("api.deepseek.com"), []string{"/v1/", "/chat/completions", "/completions", "/beta/"}, nil},
	{"xai", exact("api.x.ai"), []string{"/v1/"}, nil},
}

// ollamaPaths are Ollama's native model endpoints; its OpenAI-compatible
// ones are openAIPaths.
var ollamaPaths = []string{"/api/chat", "/api/generate", "/api/embed", "/api/embeddings"}

// Recognize says whether a request to host (host[:port], as the agent
// asked for it) at path is a model call, and of which provider. Every
// other request is plain HTTP (http.* frames). A query on path is ignored
// (Azure's ?api-version=, Gemini's ?alt=sse).
func Recognize(host, path string) (Recognized, bool) {
	path, _, _ = strings.Cut(path, "?")
	h, port := splitHost(host)
	for _, r := range hostRules {
		if r.host(h) && hasPrefix(path, r.prefixes) {
			rec := Recognized{Provider: r.provider}
			if r.model != nil {
				rec.Model = r.model(path)
			}
			return rec, true
		}
	}
	switch {
	case port == "11434" && (hasPrefix(path, ollamaPaths) || hasPrefix(path, openAIPaths)):
		return Recognized{Provider: "ollama"}, true
	case isLoopback(h) && hasPrefix(path, openAIPaths):
		return Recognized{Provider: "vllm"}, true
	}
	return Recognized{}, false
}

// splitHost lower-cases host and splits off its port ("" when none).
func splitHost(host string) (h, port string) {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil {
		return h, port
	}
	return strings.Trim(host, "[]"), ""
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func isLoopback(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func azureHost(h string) bool {
	return strings.HasSuffix(h, ".openai.azure.com") || strings.HasSuffix(h, ".cognitiveservices.azure.com") ||
		strings.HasSuffix(h, ".services.ai.azure.com")
}

// bedrockHost matches bedrock-runtime.REGION.amazonaws.com and its FIPS
// twin.
func bedrockHost(h string) bool {
	return (strings.HasPrefix(h, "bedrock-runtime.") || strings.HasPrefix(h, "bedrock-runtime-fips.")) &&
		(strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn"))
}

// segmentAfter is the path segment after the first segment named key,
// unescaped: "d" for key "deployments" in /openai/deployments/d/chat.
func segmentAfter(path, key string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts[:max(len(parts)-1, 0)] {
		if p == key {
			s, err := url.PathUnescape(parts[i+1])
			if err != nil {
				return parts[i+1]
			}
			return s
		}
	}
	return ""
}

func azureDeployment(path string) string { return segmentAfter(path, "deployments") }

// bedrockModel is the model id of /model/{id}/converse and the like: a
// model, an inference profile (us.anthropic...) or an ARN, unescaped.
func bedrockModel(path string) string { return segmentAfter(path, "model") }

// geminiModel is m of /v1beta/models/{m}:generateContent; the OpenAI
// compatible /v1beta/openai/... names it in the body.
func geminiModel(path string) string {
	m, _, _ := strings.Cut(segmentAfter(path, "models"), ":")
	return m
}

// vertexModel is m of .../publishers/{p}/models/{m}:method.
func vertexModel(path string) string { return geminiModel(path) }

// dialect is the wire format of a model call's bodies.
type dialect int

const (
	dialectOpenAI    dialect = iota // OpenAI chat, Responses, and every compatible API
	dialectAnthropic                // Anthropic Messages
	dialectGemini                   // Gemini generateContent
	dialectBedrock                  // Bedrock Converse and InvokeModel
	dialectCohere                   // Cohere v1 and v2 chat
	dialectOllama                   // Ollama's native /api/chat and /api/generate
)

// dialectOf is the wire format of a call to provider at path. Vertex and
// Gemini serve OpenAI-compatible paths as well; Vertex serves Anthropic's
// models; Bedrock's event-stream frames carry other formats inside.
func dialectOf(provider, path string) dialect {
	switch provider {
	case "anthropic":
		return dialectAnthropic
	case "gemini":
		if strings.Contains(path, "/openai/") {
			return dialectOpenAI
		}
		return dialectGemini
	case "vertex":
		switch {
		case strings.Contains(path, "/publishers/anthropic/"):
			return dialectAnthropic
		case strings.Contains(path, "/endpoints/openapi/"):
			return dialectOpenAI
		}
		return dialectGemini
	case "bedrock":
		return dialectBedrock
	case "cohere":
		if strings.HasPrefix(path, "/compatibility/") {
			return dialectOpenAI
		}
		return dialectCohere
	case "ollama":
		if strings.HasPrefix(path, "/api/") {
			return dialectOllama
		}
	}
	return dialectOpenAI
}

// PathModel is the model a call's path names, for a call to provider at
// path (Recognized.Model): the model of a Gemini, Vertex or Bedrock call or
// an Azure deployment; "" for the others.
func PathModel(provider, path string) string {
	path, _, _ = strings.Cut(path, "?")
	for _, r := range hostRules {
		if r.provider == provider && r.model != nil {
			return r.model(path)
		}
	}
	return ""
}
