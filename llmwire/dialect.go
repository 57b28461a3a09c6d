package llmwire

import (
	"net/http"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// ReadUsage reads the model and token usage of an answer to a call to
// provider (llm.request's provider key) at path, from its decoded body
// (DecodeBody) and headers: by the provider's wire format, OpenAI's and
// Anthropic's as ExtractUsage reads them. Counts a stream reports more than
// once are merged by taking the largest.
func ReadUsage(provider, path string, h http.Header, body []byte) (model string, u tapefmt.Usage) {
	switch dialectOf(provider, path) {
	case dialectGemini:
		return geminiUsage(jsonObjects(body))
	case dialectBedrock:
		return bedrockUsage(h, bedrockObjects(body))
	case dialectCohere:
		return "", cohereUsage(jsonObjects(body))
	case dialectOllama:
		return ollamaUsage(jsonObjects(body))
	}
	return ExtractUsage(body)
}

// AnswerText is what the model said in an answer to a call to provider at
// path (its decoded body): ResponseText for OpenAI's and Anthropic's
// formats, and each other provider's text and tool calls read by its own.
func AnswerText(provider, path string, body []byte) string {
	switch dialectOf(provider, path) {
	case dialectGemini:
		return geminiText(jsonObjects(body))
	case dialectBedrock:
		return bedrockText(bedrockObjects(body))
	case dialectCohere:
		return cohereText(jsonObjects(body))
	case dialectOllama:
		return ollamaText(jsonObjects(body))
	}
	return ResponseText(body)
}

// CacheApart says a call's answer counts cache reads and writes apart from
// its input tokens, as Anthropic's Messages (direct, on Vertex) and
// Bedrock do; OpenAI's and Gemini's count them among the input.
func CacheApart(provider, path string) bool {
	d := dialectOf(provider, path)
	return d == dialectAnthropic || d == dialectBedrock
}
