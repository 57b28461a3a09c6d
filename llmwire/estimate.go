package llmwire

// Usage the answer does not carry (a stream without stream_options, a
// server that leaves usage out) is counted: the request's text and the
// answer's, by the model's own tokenizer where one is embedded (OpenAI's
// o200k_base and cl100k_base), else one token per 4 bytes. Such counts are
// marked estimated (CallUsage.Estimated) wherever they are shown.

import (
	"encoding/json"
	"hash/maphash"
	"sort"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// bytesPerToken is the estimate for a model without an embedded tokenizer:
// about 4 bytes of English text a token, as providers document.
const bytesPerToken = 4

var (
	o200k     = sync.OnceValue(codec.NewO200kBase)
	cl100k    = sync.OnceValue(codec.NewCl100kBase)
	o200kLike = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "gpt-oss", "codex"}
	cl100Like = []string{"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002"}
)

// tokenizerFor is the embedded tokenizer of model (a provider prefix such
// as openai/ ignored), or nil when none is embedded for it.
func tokenizerFor(model string) *codec.Codec {
	m := strings.ToLower(model[strings.LastIndexByte(model, '/')+1:])
	for _, p := range o200kLike {
		if strings.HasPrefix(m, p) {
			return o200k()
		}
	}
	for _, p := range cl100Like {
		if strings.HasPrefix(m, p) {
			return cl100k()
		}
	}
	return nil
}

// CountTokens counts the tokens of text for model: by its tokenizer where
// one is embedded (exact is true), else one per 4 bytes, rounded up.
func CountTokens(model, text string) (n int64, exact bool) {
	if text == "" {
		return 0, true
	}
	if c := tokenizerFor(model); c != nil {
		if k, err := c.Count(text); err == nil {
			return int64(k), true
		}
	}
	return int64((len(text) + bytesPerToken - 1) / bytesPerToken), false
}

// perMessage is what each message of a conversation adds to its text, and
// the reply's priming to the whole (OpenAI's count for chat).
const perMessage = 3

// estimateUsage counts the tokens of a call whose answer reports none: the
// input is every string of its request body (the model name left out, an
// image's data URL counted as 85 tokens) plus 3 tokens for each message
// and 3 for the reply (estimateInput); the output is what the model said
// (answerTokens).
func estimateUsage(model string, call Call, answer []byte) tapefmt.Usage {
	return tapefmt.Usage{Input: estimateInput(model, call), Output: answerTokens(model, call, answer)}
}

// answerTokens counts the tokens of what the model said in answer.
func answerTokens(model string, call Call, answer []byte) int64 {
	n, _ := CountTokens(model, AnswerText(call.Provider, call.Path, answer))
	return n
}

// estimateInput counts the tokens of call's request body, as
// estimateUsage says.
func estimateInput(model string, call Call) int64 {
	var strs []string
	messages := 0
	var v map[string]any
	if json.Unmarshal(call.Body, &v) == nil {
		delete(v, "model")
		collectStrings(v, &strs)
		for _, k := range []string{"messages", "contents", "input", "chat_history"} {
			if list, ok := v[k].([]any); ok {
				messages += len(list)
			}
		}
	}
	images := 0
	kept := strs[:0]
	for _, s := range strs {
		if strings.HasPrefix(s, "data:") && len(s) > 256 {
			images++
			continue
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 && images == 0 {
		return 0
	}
	return countStrings(model, kept) + int64(85*images+perMessage*messages+perMessage)
}

// countStrings counts the tokens of each of strs, as CountTokens does. A
// conversation's requests repeat every earlier message, so the counts of
// long strings are kept (countCache): each message is counted once a run.
func countStrings(model string, strs []string) int64 {
	c := tokenizerFor(model)
	var n int64
	for _, s := range strs {
		switch {
		case c == nil:
			n += int64((len(s) + bytesPerToken - 1) / bytesPerToken)
		case len(s) < minCached:
			k, _ := CountTokens(model, s)
			n += k
		default:
			n += countCache.count(c, s)
		}
	}
	return n
}

// minCached is the shortest string whose count is kept; maxCached bounds
// the counts kept (the cache starts afresh past it).
const minCached, maxCached = 256, 1 << 15

type countKey struct {
	c *codec.Codec
	h uint64
}

// countCache holds token counts of long strings by tokenizer and hash.
var countCache = tokenCounts{seed: maphash.MakeSeed(), m: map[countKey]int64{}}

type tokenCounts struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[countKey]int64
}

func (t *tokenCounts) count(c *codec.Codec, s string) int64 {
	key := countKey{c, maphash.String(t.seed, s)}
	t.mu.Lock()
	n, ok := t.m[key]
	t.mu.Unlock()
	if ok {
		return n
	}
	k, err := c.Count(s)
	if err != nil {
		return int64((len(s) + bytesPerToken - 1) / bytesPerToken)
	}
	t.mu.Lock()
	if len(t.m) >= maxCached {
		clear(t.m)
	}
	t.m[key] = int64(k)
	t.mu.Unlock()
	return int64(k)
}

// collectStrings appends the strings of a decoded JSON value in a fixed
// order (object keys sorted), the keys of objects under a tool's schema
// among them: a tool's parameters are names the model reads.
func collectStrings(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, v)
	case []any:
		for _, e := range v {
			collectStrings(e, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, isObj := v[k].(map[string]any); isObj {
				*out = append(*out, k)
			}
			collectStrings(v[k], out)
		}
	}
}
