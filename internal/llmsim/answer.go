package llmsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// answer is what the server says to one request, before it is put into any
// API's wire format.
type answer struct {
	rule   string // rule name, or "fallback"
	text   string
	calls  []toolCall
	pacing pacing
	fail   *failure
}

// toolCall is one tool call of an answer; args is compact JSON (an object).
type toolCall struct {
	name string
	args string
}

func (m *matcher) matches(c *conversation) bool {
	switch {
	case m.api != "" && m.api != c.api:
		return false
	case m.model != nil && !m.model.MatchString(c.model):
		return false
	case m.user != nil && !m.user.MatchString(c.user):
		return false
	case m.system != nil && !m.system.MatchString(c.system):
		return false
	case m.afterTool == afterNone && c.endsWithTool:
		return false
	case m.afterTool == afterSome && !c.endsWithTool:
		return false
	case m.toolName != nil && !m.toolName.MatchString(c.tool):
		return false
	case m.toolResult != nil && (!c.endsWithTool || !m.toolResult.MatchString(c.toolResult)):
		return false
	}
	return true
}

// pick returns the first rule that matches c and has not used up its times,
// counting the use; nil when none does.
func (s *Server) pick(c *conversation) *rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.script.rules {
		r := &s.script.rules[i]
		if !r.match.matches(c) {
			continue
		}
		if r.chance > 0 && !s.draw(i, r.chance) {
			continue
		}
		if r.times > 0 {
			if s.used[i] >= r.times {
				continue
			}
			s.used[i]++
		}
		return r
	}
	return nil
}

// answerFor builds the answer to c from the script, or the fallback.
func (s *Server) answerFor(c *conversation) answer {
	r := s.pick(c)
	if r == nil {
		return fallbackAnswer(c, s.script.defaults)
	}
	a := answer{rule: r.name, pacing: r.pacing, fail: r.fail}
	a.text = expand(r.text, c, false)
	for _, tc := range r.calls {
		a.calls = append(a.calls, toolCall{name: tc.Name, args: expand(string(tc.Arguments), c, true)})
	}
	return a
}

// expand fills the {{...}} templates of s from c. In JSON mode the values are
// escaped for use inside a JSON string, so arguments stay valid JSON.
func expand(s string, c *conversation, inJSON bool) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	esc := func(v string) string {
		if !inJSON {
			return v
		}
		b := marshal(v)
		return string(b[1 : len(b)-1])
	}
	return strings.NewReplacer(
		"{{model}}", esc(c.model),
		"{{user}}", esc(c.user),
		"{{system}}", esc(c.system),
		"{{tool}}", esc(c.tool),
		"{{tool_result}}", esc(c.toolResult),
	).Replace(s)
}

var (
	fallbackOpeners = []string{
		"The needle drops on a fresh groove:",
		"Side B, track two:",
		"From the jukebox in the corner:",
		"Spinning a new record:",
		"A quiet B-side answers:",
		"The selector clicks and plays:",
		"Coin in, song out:",
		"Under the neon light:",
	}
	fallbackBodies = []string{
		"every run leaves a tape, and every tape can be played again.",
		"the answer you want is one fork away.",
		"I would change the model before I changed the prompt.",
		"replays are exact; only the future is live.",
		"nothing was written that cannot be rolled back.",
		"the breaker stayed closed this time.",
		"the tool calls went quiet, so here is plain text.",
		"a different prompt would have picked a different song.",
	}
)

// fallbackAnswer is the reply when no rule matches: a sentence picked by a
// hash of (model, last user message), so that changing either changes it.
func fallbackAnswer(c *conversation, p pacing) answer {
	h := sha256.Sum256([]byte("llmsim-fallback\x00" + c.model + "\x00" + c.user))
	text := fmt.Sprintf("%s %s [%s #%08x]",
		fallbackOpeners[int(h[0])%len(fallbackOpeners)],
		fallbackBodies[int(h[1])%len(fallbackBodies)],
		c.model, binary.BigEndian.Uint32(h[2:6]))
	return answer{rule: "fallback", text: text, pacing: p}
}

// tokens estimates a token count for n characters (about four per token).
func tokens(n int) int { return (n + 3) / 4 }

// inputTokens estimates the prompt tokens of a request: its text at four
// characters a token, plus its JSON structure (tool schemas, roles) at
// sixteen bytes a token.
func inputTokens(c *conversation, bodyLen int) int {
	n := tokens(c.inputChars) + max(bodyLen-c.inputChars, 0)/16
	return max(n, 1)
}

// outputTokens estimates the completion tokens of an answer.
func (a *answer) outputTokens() int {
	n := tokens(utf8.RuneCountInString(a.text))
	for _, tc := range a.calls {
		n += tokens(len(tc.name)+len(tc.args)) + 4
	}
	return max(n, 1)
}

// finishReason is the OpenAI chat finish_reason of the answer.
func (a *answer) finishReason() string {
	if len(a.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// chunks cuts s into pieces of at most n runes; an empty s gives none.
func chunks(s string, n int) []string {
	if n <= 0 {
		n = defaultChunk
	}
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// marshal is json.Marshal without HTML escaping, as the real APIs write JSON.
func marshal(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("llmsim: marshal: " + err.Error()) // only our own types reach here
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// draw says whether rule i, which matched, answers this time: true with
// its chance, from its own generator (seeded by the script's seed and i).
// The caller holds s.mu.
func (s *Server) draw(i int, chance float64) bool {
	if s.draws == nil {
		s.draws = map[int]*rand.Rand{}
	}
	g := s.draws[i]
	if g == nil {
		g = rand.New(rand.NewPCG(s.script.seed, uint64(i)))
		s.draws[i] = g
	}
	return g.Float64() < chance
}
