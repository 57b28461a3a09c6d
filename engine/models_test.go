package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// TestListModels asks the scripted server's model list in both shapes,
// at the URL a fork's live calls would go to.
func TestListModels(t *testing.T) {
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := []string{"OPENAI_BASE_URL=" + srv.OpenAIBaseURL() + "/", "ANTHROPIC_API_KEY=sk-test"}
	if got := LiveUpstream("openai", nil, env); got != srv.OpenAIBaseURL() {
		t.Errorf("openai's live upstream from the environment: %q", got)
	}
	if got := LiveUpstream("anthropic", map[string]string{"anthropic": srv.AnthropicBaseURL()}, env); got != srv.AnthropicBaseURL() {
		t.Errorf("anthropic's live upstream given: %q", got)
	}
	if got := LiveUpstream("anthropic", nil, nil); got != "https://api.anthropic.com" {
		t.Errorf("anthropic's default: %q", got)
	}
	for provider, base := range map[string]string{"openai": srv.OpenAIBaseURL(), "anthropic": srv.AnthropicBaseURL()} {
		ids, err := ListModels(context.Background(), provider, base, env)
		if err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		if !slices.Contains(ids, "demo-large") || !slices.Contains(ids, "demo-small") || !slices.IsSorted(ids) {
			t.Errorf("%s: models %v", provider, ids)
		}
	}
	if _, err := ListModels(context.Background(), "openai", "http://127.0.0.1:1/v1", nil); err == nil {
		t.Error("a closed port: no error")
	}
	if _, err := ListModels(context.Background(), "mistral", srv.OpenAIBaseURL(), nil); err == nil {
		t.Error("an unknown provider: no error")
	}
}
