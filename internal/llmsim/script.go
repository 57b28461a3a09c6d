package llmsim

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// scriptVersion is the only script format version this package reads.
const scriptVersion = 1

// Limits on script values, so that a typo cannot make the server sleep for
// hours or answer one byte at a time forever.
const (
	maxChunkSize = 1 << 20 // bytes (runes for text) in one streamed chunk
	maxDelayMS   = 60_000  // per-chunk or first-chunk delay
	defaultChunk = 6       // runes per streamed chunk when a script sets none
)

// ErrScript is wrapped by every error about a malformed script.
var ErrScript = errors.New("llmsim: bad script")

//go:embed demo.json
var demoScript []byte

// defaultScriptJSON returns a copy of the bundled demo script, the one
// DefaultScript parses and `jukebox demo-model` serves when given no file.
func defaultScriptJSON() []byte { return bytes.Clone(demoScript) }

// DefaultScript returns the parsed bundled demo script.
func DefaultScript() *Script {
	s, err := ParseScript(demoScript)
	if err != nil {
		panic("llmsim: bundled demo script: " + err.Error())
	}
	return s
}

// Script is a parsed, validated script: the ordered rules a Server answers
// with. Build one with ParseScript, LoadScript or DefaultScript; the format
// is described in the package documentation. A Script is immutable and may
// be shared by many servers.
type Script struct {
	rules    []rule
	defaults pacing
	hash     [32]byte
	seed     uint64 // of the rules' chance draws
}

// Len returns the number of rules in the script.
func (s *Script) Len() int { return len(s.rules) }

// hashHex returns the hex SHA-256 of the script's bytes. Response ids are
// derived from it, so two different scripts never share ids.
func (s *Script) hashHex() string { return hex.EncodeToString(s.hash[:]) }

// LoadScript reads and parses the script file at path.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("llmsim: load script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// scriptJSON is the on-disk form of a Script.
type scriptJSON struct {
	Version  int        `json:"version"`
	Seed     uint64     `json:"seed"`
	Defaults pacingJSON `json:"defaults"`
	Rules    []ruleJSON `json:"rules"`
}

type pacingJSON struct {
	ChunkSize    int `json:"chunk_size"`
	DelayMS      int `json:"delay_ms"`
	FirstDelayMS int `json:"first_delay_ms"`
}

type ruleJSON struct {
	Name  string    `json:"name"`
	Match matchJSON `json:"match"`
	Reply replyJSON `json:"reply"`
	Fail  *failJSON `json:"fail"`
	Times int       `json:"times"`
	// Chance makes a rule that matches answer only that often (0 < chance
	// <= 1), drawn from a generator seeded by the script's seed and the
	// rule's place: the same requests in the same order get the same
	// answers.
	Chance float64 `json:"chance"`
	pacingJSON
}

type matchJSON struct {
	API        string          `json:"api"`
	Model      string          `json:"model"`
	User       string          `json:"user"`
	System     string          `json:"system"`
	AfterTool  json.RawMessage `json:"after_tool"`
	ToolResult string          `json:"tool_result"`
}

type replyJSON struct {
	Text      string         `json:"text"`
	ToolCalls []toolCallJSON `json:"tool_calls"`
}

type toolCallJSON struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type failJSON struct {
	Status           int             `json:"status"`
	Type             string          `json:"type"`
	Message          string          `json:"message"`
	Body             json.RawMessage `json:"body"`
	RetryAfter       int             `json:"retry_after"`
	ResetAfterChunks *int            `json:"reset_after_chunks"`
	HangAfterChunks  *int            `json:"hang_after_chunks"`
	Hang             bool            `json:"hang"`
}

// ParseScript parses and validates a script. Unknown fields are errors, so a
// misspelt key does not silently match everything.
func ParseScript(data []byte) (*Script, error) {
	var sj scriptJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScript, err)
	}
	if sj.Version != scriptVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrScript, sj.Version, scriptVersion)
	}
	s := &Script{hash: sha256.Sum256(data), seed: sj.Seed}
	var err error
	if s.defaults, err = sj.Defaults.compile(pacing{chunk: defaultChunk}); err != nil {
		return nil, fmt.Errorf("%w: defaults: %v", ErrScript, err)
	}
	for i, rj := range sj.Rules {
		r, err := rj.compile(s.defaults)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %d (%q): %v", ErrScript, i, rj.Name, err)
		}
		if r.name == "" {
			r.name = fmt.Sprintf("rule-%d", i)
		}
		s.rules = append(s.rules, r)
	}
	return s, nil
}

// pacing is how a streamed answer is cut and timed.
type pacing struct {
	chunk      int // runes of text (bytes of JSON) per chunk
	delayMS    int // before every chunk but the first
	firstDelay int // before the first chunk (time to first token)
}

func (p pacingJSON) compile(base pacing) (pacing, error) {
	switch {
	case p.ChunkSize < 0 || p.ChunkSize > maxChunkSize:
		return base, fmt.Errorf("chunk_size %d out of range 0..%d", p.ChunkSize, maxChunkSize)
	case p.DelayMS < 0 || p.DelayMS > maxDelayMS:
		return base, fmt.Errorf("delay_ms %d out of range 0..%d", p.DelayMS, maxDelayMS)
	case p.FirstDelayMS < 0 || p.FirstDelayMS > maxDelayMS:
		return base, fmt.Errorf("first_delay_ms %d out of range 0..%d", p.FirstDelayMS, maxDelayMS)
	}
	if p.ChunkSize > 0 {
		base.chunk = p.ChunkSize
	}
	if p.DelayMS > 0 {
		base.delayMS = p.DelayMS
	}
	if p.FirstDelayMS > 0 {
		base.firstDelay = p.FirstDelayMS
	}
	return base, nil
}

// rule is one compiled script rule.
type rule struct {
	name   string
	match  matcher
	text   string
	calls  []toolCallJSON // arguments compacted, always a JSON object
	fail   *failure
	times  int     // 0: unlimited
	chance float64 // 0: always
	pacing pacing
}

func (rj ruleJSON) compile(defaults pacing) (rule, error) {
	r := rule{name: rj.Name, text: rj.Reply.Text, times: rj.Times}
	var err error
	if r.pacing, err = rj.pacingJSON.compile(defaults); err != nil {
		return r, err
	}
	if rj.Times < 0 {
		return r, fmt.Errorf("times %d is negative", rj.Times)
	}
	if rj.Chance < 0 || rj.Chance > 1 || rj.Chance != rj.Chance {
		return r, fmt.Errorf("chance %v: want a number above 0 and at most 1", rj.Chance)
	}
	r.chance = rj.Chance
	if r.match, err = rj.Match.compile(); err != nil {
		return r, err
	}
	for i, tc := range rj.Reply.ToolCalls {
		if tc.Name == "" {
			return r, fmt.Errorf("tool_calls[%d]: no name", i)
		}
		args, err := compactObject(tc.Arguments)
		if err != nil {
			return r, fmt.Errorf("tool_calls[%d] %s: %v", i, tc.Name, err)
		}
		r.calls = append(r.calls, toolCallJSON{Name: tc.Name, Arguments: args})
	}
	if rj.Fail != nil {
		if r.fail, err = rj.Fail.compile(); err != nil {
			return r, fmt.Errorf("fail: %v", err)
		}
	}
	if r.text == "" && len(r.calls) == 0 && r.fail == nil {
		return r, errors.New("reply has neither text nor tool_calls, and no fail")
	}
	return r, nil
}

// compactObject checks that raw is a JSON object (or absent, meaning {}) and
// returns it compacted, keeping the author's key order.
func compactObject(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// failure is a compiled fail clause.
type failure struct {
	status     int
	errType    string
	message    string
	body       json.RawMessage
	retryAfter int
	resetAfter int // chunks before the connection is reset; -1: never
	hangAfter  int // chunks before the server stops answering; -1: never
}

func (fj failJSON) compile() (*failure, error) {
	f := &failure{status: fj.Status, errType: fj.Type, message: fj.Message, body: fj.Body,
		retryAfter: fj.RetryAfter, resetAfter: -1, hangAfter: -1}
	if fj.ResetAfterChunks != nil {
		f.resetAfter = *fj.ResetAfterChunks
	}
	if fj.HangAfterChunks != nil {
		f.hangAfter = *fj.HangAfterChunks
	}
	if fj.Hang && f.hangAfter < 0 {
		f.hangAfter = 0
	}
	if len(fj.Body) > 0 && !json.Valid(fj.Body) {
		return nil, errors.New("body is not valid JSON")
	}
	modes := 0
	for _, on := range []bool{f.status != 0, f.resetAfter >= 0, f.hangAfter >= 0} {
		if on {
			modes++
		}
	}
	switch {
	case modes != 1:
		return nil, errors.New("set exactly one of status, reset_after_chunks, hang/hang_after_chunks")
	case f.status != 0 && (f.status < 400 || f.status > 599):
		return nil, fmt.Errorf("status %d is not an HTTP error", f.status)
	case f.resetAfter < -1 || f.hangAfter < -1 || f.retryAfter < 0:
		return nil, errors.New("negative chunk count or retry_after")
	}
	return f, nil
}

// matcher is a compiled match clause; a zero matcher matches every request.
type matcher struct {
	api        string
	model      *regexp.Regexp
	modelLit   string // the model name when the pattern has no wildcard
	user       *regexp.Regexp
	system     *regexp.Regexp
	toolResult *regexp.Regexp
	afterTool  int            // afterAny, afterNone, afterSome
	toolName   *regexp.Regexp // with afterSome: nil means any tool
}

const (
	afterAny  = iota // the clause was absent
	afterNone        // false: the conversation must not end with a tool result
	afterSome        // true or a name: it must
)

func (mj matchJSON) compile() (matcher, error) {
	m := matcher{api: mj.API}
	switch mj.API {
	case "", apiChat, apiResponses, apiMessages:
	default:
		return m, fmt.Errorf("match.api %q: want %q, %q or %q", mj.API, apiChat, apiResponses, apiMessages)
	}
	var err error
	if mj.Model != "" {
		m.model = globRegexp(mj.Model)
		if !strings.ContainsAny(mj.Model, "*?") {
			m.modelLit = mj.Model
		}
	}
	for _, f := range []struct {
		dst  **regexp.Regexp
		src  string
		name string
	}{{&m.user, mj.User, "user"}, {&m.system, mj.System, "system"}, {&m.toolResult, mj.ToolResult, "tool_result"}} {
		if f.src == "" {
			continue
		}
		if *f.dst, err = regexp.Compile(f.src); err != nil {
			return m, fmt.Errorf("match.%s: %v", f.name, err)
		}
	}
	return m, m.compileAfterTool(mj.AfterTool)
}

func (m *matcher) compileAfterTool(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		m.afterTool = afterNone
		if b {
			m.afterTool = afterSome
		}
		return nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || name == "" {
		return errors.New("match.after_tool: want true, false or a tool name (glob)")
	}
	m.afterTool, m.toolName = afterSome, globRegexp(name)
	return nil
}

// globRegexp turns a glob (* any run, ? one rune, everything else literal,
// "/" included) into an anchored regexp. A pattern without wildcards is an
// exact match.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`\A`)
	for _, r := range glob {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}
