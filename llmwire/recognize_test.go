package llmwire

import "testing"

// TestRecognize pins which requests are model calls, of which provider,
// and the model a path names.
func TestRecognize(t *testing.T) {
	cases := []struct {
		host, path      string
		provider, model string // provider "": not a model call
	}{
		{"api.openai.com", "/v1/chat/completions", "openai", ""},
		{"API.OpenAI.com:443", "/v1/responses", "openai", ""},
		{"api.openai.com", "/backend/status", "", ""},
		{"myres.openai.azure.com", "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21", "azure-openai", "gpt4o-prod"},
		{"myres.openai.azure.com", "/openai/v1/chat/completions", "azure-openai", ""},
		{"myres.openai.azure.com", "/other", "", ""},
		{"api.anthropic.com", "/v1/messages", "anthropic", ""},
		{"bedrock-runtime.us-east-1.amazonaws.com", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke", "bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0"},
		{"bedrock-runtime.eu-west-1.amazonaws.com", "/model/us.anthropic.claude-3-7-sonnet-20250219-v1:0/invoke-with-response-stream", "bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"},
		{"bedrock-runtime.us-west-2.amazonaws.com", "/model/amazon.nova-pro-v1:0/converse-stream", "bedrock", "amazon.nova-pro-v1:0"},
		{"bedrock.us-west-2.amazonaws.com", "/foundation-models", "", ""},
		{"us-east5-aiplatform.googleapis.com", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-5-sonnet-v2@20241022:streamRawPredict", "vertex", "claude-3-5-sonnet-v2@20241022"},
		{"us-central1-aiplatform.googleapis.com", "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent", "vertex", "gemini-2.0-flash"},
		{"generativelanguage.googleapis.com", "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", "gemini", "gemini-2.0-flash"},
		{"generativelanguage.googleapis.com", "/v1beta/openai/chat/completions", "gemini", ""},
		{"api.mistral.ai", "/v1/chat/completions", "mistral", ""},
		{"api.cohere.com", "/v2/chat", "cohere", ""},
		{"api.cohere.ai", "/v1/chat", "cohere", ""},
		{"openrouter.ai", "/api/v1/chat/completions", "openrouter", ""},
		{"openrouter.ai", "/docs", "", ""},
		{"api.groq.com", "/openai/v1/chat/completions", "groq", ""},
		{"api.together.xyz", "/v1/chat/completions", "together", ""},
		{"api.fireworks.ai", "/inference/v1/chat/completions", "fireworks", ""},
		{"api.deepseek.com", "/chat/completions", "deepseek", ""},
		{"api.x.ai", "/v1/chat/completions", "xai", ""},
		{"localhost:11434", "/api/chat", "ollama", ""},
		{"127.0.0.1:11434", "/api/generate", "ollama", ""},
		{"127.0.0.1:11434", "/v1/chat/completions", "ollama", ""},
		{"127.0.0.1:8000", "/v1/chat/completions", "vllm", ""},
		{"[::1]:8000", "/v1/completions", "vllm", ""},
		{"127.0.0.1:8000", "/health", "", ""},
		{"10.0.0.5:8000", "/v1/chat/completions", "", ""},
		{"api.github.com", "/v1/chat/completions", "", ""},
		{"api.search.example", "/search?q=weather", "", ""},
	}
	for _, c := range cases {
		rec, ok := Recognize(c.host, c.path)
		if ok != (c.provider != "") || rec.Provider != c.provider || rec.Model != c.model {
			t.Errorf("Recognize(%q, %q) = %+v, %v; want provider %q model %q", c.host, c.path, rec, ok, c.provider, c.model)
		}
	}
}

// TestDialectOf pins the wire format each provider's paths follow.
func TestDialectOf(t *testing.T) {
	cases := []struct {
		provider, path string
		want           dialect
	}{
		{"openai", "/v1/chat/completions", dialectOpenAI},
		{"groq", "/openai/v1/chat/completions", dialectOpenAI},
		{"anthropic", "/v1/messages", dialectAnthropic},
		{"vertex", "/v1/projects/p/locations/l/publishers/anthropic/models/m:rawPredict", dialectAnthropic},
		{"vertex", "/v1/projects/p/locations/l/publishers/google/models/m:generateContent", dialectGemini},
		{"gemini", "/v1beta/models/m:generateContent", dialectGemini},
		{"gemini", "/v1beta/openai/chat/completions", dialectOpenAI},
		{"bedrock", "/model/m/converse", dialectBedrock},
		{"cohere", "/v2/chat", dialectCohere},
		{"ollama", "/api/chat", dialectOllama},
		{"ollama", "/v1/chat/completions", dialectOpenAI},
	}
	for _, c := range cases {
		if got := dialectOf(c.provider, c.path); got != c.want {
			t.Errorf("dialectOf(%q, %q) = %d, want %d", c.provider, c.path, got, c.want)
		}
	}
}
