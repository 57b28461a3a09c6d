package prices

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestPrefixedNames: a provider-prefixed name (LiteLLM's, OpenRouter's),
// a Bedrock model id or inference profile and a Vertex name are priced
// as the model they name.
func TestPrefixedNames(t *testing.T) {
	for model, want := range map[string]string{
		"openai/gpt-4o-mini":                                         "gpt-4o-mini",
		"openrouter/openai/gpt-4o-mini":                              "gpt-4o-mini",
		"azure/gpt-4o":                                               "gpt-4o",
		"anthropic/claude-3-7-sonnet-20250219":                       "claude-3-7-sonnet",
		"openrouter/anthropic/claude-3.7-sonnet":                     "claude-3-7-sonnet",
		"anthropic/claude-sonnet-4.5":                                "claude-sonnet-4-5",
		"bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0":          "claude-3-5-sonnet",
		"anthropic.claude-3-5-sonnet-20240620-v1:0":                  "claude-3-5-sonnet",
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0":               "claude-3-7-sonnet",
		"bedrock/converse/eu.anthropic.claude-3-haiku-20240307-v1:0": "claude-3-haiku",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0": "claude-3-7-sonnet",
		"us.amazon.nova-pro-v1:0":                      "amazon.nova-pro-v1:0",
		"gemini/gemini-2.0-flash":                      "gemini-2.0-flash",
		"vertex_ai/gemini-2.0-flash-001":               "gemini-2.0-flash",
		"vertex_ai/claude-3-7-sonnet@20250219":         "claude-3-7-sonnet",
		"claude-3-5-sonnet-v2@20241022":                "claude-3-5-sonnet-v2",
		"models/gemini-2.5-flash":                      "gemini-2.5-flash",
		"mistral/mistral-large-latest":                 "mistral-large-latest",
		"command-r-plus-08-2024":                       "command-r-plus",
		"deepseek/deepseek-chat":                       "deepseek-chat",
		"groq/llama-3.3-70b-versatile":                 "llama-3.3-70b-versatile",
		"xai/grok-3-mini":                              "grok-3-mini",
		"openrouter/meta-llama/llama-3.3-70b-instruct": "",
		"ollama/llama3.2":                              "",
	} {
		got, known := RateOf(model)
		base, baseKnown := RateOf(want)
		if known != (want != "") || (known && (!baseKnown || got != base)) {
			t.Errorf("%s: rate %+v (known %v), want %s's", model, got, known, want)
		}
	}
}

// TestDocsModelsPriced: every model README.md and docs/ name is in the
// price table (examples in docs/ use claude-3-7-sonnet).
func TestDocsModelsPriced(t *testing.T) {
	names, err := filepath.Glob("../docs/*.md")
	if err != nil || len(names) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	var raw []byte
	for _, name := range append(names, "../README.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	re := regexp.MustCompile(`\b(gpt-[0-9][a-z0-9.-]*[a-z0-9]|claude-[a-z0-9.-]*[a-z0-9]|gemini-[0-9][a-z0-9.-]*[a-z0-9]|o[134](-mini)?\b|demo-(large|small))`)
	seen := map[string]bool{}
	for _, m := range re.FindAllString(string(raw), -1) {
		if seen[m] {
			continue
		}
		seen[m] = true
		if _, known := RateOf(m); !known {
			t.Errorf("the docs name %s, which has no price", m)
		}
	}
	if !seen["claude-3-7-sonnet"] {
		t.Error("the docs no longer name claude-3-7-sonnet: the test's pattern missed it")
	}
}
