package prices

import "strings"

// prefixes are the provider prefixes LiteLLM (openai/gpt-4o-mini,
// bedrock/converse/...) and OpenRouter (anthropic/claude-3.7-sonnet) put
// before a model's name; they are taken off, outermost first.
var prefixes = []string{"openrouter/", "openai/", "azure/", "azure_ai/", "anthropic/", "bedrock/converse/",
	"bedrock/invoke/", "bedrock/", "gemini/", "google/", "vertex_ai/", "vertex_ai_beta/", "mistral/",
	"mistralai/", "cohere/", "cohere_chat/", "groq/", "together_ai/", "fireworks_ai/", "deepseek/", "xai/",
	"x-ai/", "ollama/", "ollama_chat/", "hosted_vllm/", "vllm/", "models/"}

// bedrockRegions are the geography prefixes of Bedrock's cross-region
// inference profiles (us.anthropic.claude-...).
var bedrockRegions = []string{"us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global."}

// names are the names model may be priced under, in order: itself, then
// without provider prefixes, then as Bedrock names it (an ARN's last part,
// the region of an inference profile, and for Anthropic's models the
// vendor and version: anthropic.claude-3-5-sonnet-20240620-v1:0 is
// claude-3-5-sonnet-20240620), then with OpenRouter's dotted Claude
// versions dashed (claude-3.7-sonnet is claude-3-7-sonnet).
func names(model string) []string {
	out := []string{model}
	add := func(s string) {
		if s != "" && s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	m := model
	for again := true; again; {
		again = false
		for _, p := range prefixes {
			if rest, ok := strings.CutPrefix(m, p); ok {
				m, again = rest, true
			}
		}
	}
	add(m)
	if strings.HasPrefix(m, "arn:") {
		m = m[strings.LastIndexByte(m, '/')+1:]
		add(m)
	}
	for _, r := range bedrockRegions {
		if rest, ok := strings.CutPrefix(m, r); ok {
			m = rest
			add(m)
		}
	}
	if rest, ok := strings.CutPrefix(m, "anthropic."); ok {
		if i := strings.LastIndex(rest, "-v"); i > 0 && strings.Contains(rest[i:], ":") {
			rest = rest[:i]
		}
		m = rest
		add(m)
	}
	if strings.HasPrefix(m, "claude-") && strings.Contains(m, ".") {
		add(strings.ReplaceAll(m, ".", "-"))
	}
	return out
}
