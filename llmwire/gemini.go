package llmwire

// Google Gemini's generateContent (AI Studio and Vertex): a whole
// GenerateContentResponse, or streamGenerateContent's pieces of one (a
// JSON array, or server-sent events with ?alt=sse), each carrying
// usageMetadata so far.

import (
	"cmp"
	"encoding/json"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// geminiObject is a GenerateContentResponse as far as model, usage and
// text go.
type geminiObject struct {
	ModelVersion string `json:"modelVersion"`
	Usage        *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text         string `json:"text"`
				Thought      bool   `json:"thought"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
	} `json:"candidates"`
}

// geminiUsage reads model and usage: prompt tokens (cached ones among
// them, as OpenAI counts), and output as billed, candidates plus thoughts.
func geminiUsage(objs [][]byte) (model string, u tapefmt.Usage) {
	for _, obj := range objs {
		var g geminiObject
		if json.Unmarshal(obj, &g) != nil {
			continue
		}
		model = cmp.Or(model, g.ModelVersion)
		if m := g.Usage; m != nil {
			u.Input = max(u.Input, m.Prompt)
			u.Output = max(u.Output, m.Candidates+m.Thoughts)
			u.Cached = max(u.Cached, m.Cached)
			u.Reasoning = max(u.Reasoning, m.Thoughts)
		}
	}
	return model, u
}

// geminiText is the answer's text (thoughts left out), then its function
// calls, from the first candidate of each piece.
func geminiText(objs [][]byte) string {
	var text strings.Builder
	var calls []string
	for _, obj := range objs {
		var g geminiObject
		if json.Unmarshal(obj, &g) != nil || len(g.Candidates) == 0 {
			continue
		}
		for _, p := range g.Candidates[0].Content.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, "→ "+p.FunctionCall.Name+" "+compactJSON(p.FunctionCall.Args))
			} else if !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	return joinText(text.String(), calls)
}

// joinText is text then one line per call, empty parts left out.
func joinText(text string, calls []string) string {
	parts := calls
	if text != "" {
		parts = append([]string{text}, calls...)
	}
	return strings.Join(parts, "\n")
}
