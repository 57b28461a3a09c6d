package redact

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A rule finds a credential: group 2 of re is the value masked, group 1
// what stays before it (a rule whose re has one group masks the match).
//
// Every match holds one of keys (ASCII; compared ignoring case when fold),
// and starts where from says, given where that key was found: the rules
// are run only there, anchored (find), never over the whole text, since
// Go's regexps read text without a literal prefix at a few MB/s and bodies
// are large.
type rule struct {
	re   *regexp.Regexp
	keys []string
	fold bool
	// from is where a match holding the key found at p starts, or -1
	// when none can; nil: at p, after a word boundary.
	from func(b []byte, p int) int
	// follows, when set, is a quick test that what comes after a key
	// ending at end can be the rest of a match: a key of a word that is
	// no credential's name costs no regexp run.
	follows  func(b []byte, end int) bool
	anchored *regexp.Regexp // ^(?:re)
}

// newRule compiles a rule; keys must be lower case when fold.
func newRule(expr string, fold bool, from func([]byte, int) int, keys ...string) rule {
	if from == nil {
		from = boundaryAt
	}
	return rule{re: regexp.MustCompile(expr), keys: keys, fold: fold, from: from,
		anchored: regexp.MustCompile(`^(?:` + expr + `)`)}
}

// quote is an optional quote, escaped or not, as in a JSON-encoded script.
const quote = `(?:\\?["'])?`

// anyText are the credential rules that hold in any text jukebox keeps:
// bodies, files, output, tool calls, MCP messages, and the command line
// and environment. Each is specific enough not to hit ordinary words: a
// token of a known format, a value after a credential's own name and a
// colon or equals sign, a cookie or authorization header, a URL's user
// info.
var anyText = sync.OnceValue(func() []rule {
	return []rule{
		// Tokens of known formats: OpenAI, Anthropic, GitHub, AWS key ids,
		// Slack, GitLab, Google API keys.
		withFollows(tokenFollows, newRule(`\b()(sk-(?:proj-|ant-|live-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35})`,
			false, nil, "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "glpat-", "AIza")),
		// "api_key": "X", client_secret=X, x-api-key: X; aws_secret_access_key X.
		withFollows(nameFollows, newRule(`(?i)(\b[\w-]*(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?key|client[_-]?secret|private[_-]?key|password|passwd|passphrase|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token)`+quote+`\s*[:=]\s*`+quote+`)([^\s'"\\,;}&)]+)`,
			true, wordRunStart, "key", "secret", "pass", "token")), // in each name, and the start is the run's
		newRule(`(?i)(\baws_(?:secret_access_key|session_token)`+quote+`\s+`+quote+`)([^\s'"\\,;}&)]+)`, true, nil, "aws_"),
		// Authorization: Bearer X, and a cookie header's whole value.
		newRule(`(?i)(\b(?:proxy-)?authorization`+quote+`\s*[:=]\s*`+quote+`(?:(?:bearer|basic|token|digest)\s+)?)([^\s'"\\,}]+)`,
			true, after("proxy-"), "authorization"),
		newRule(`(?i)(\b(?:set-)?cookie`+quote+`\s*:\s*`+quote+`)([^'"\\\r\n]+)`, true, after("set-"), "cookie"),
		// https://user:password@host and https://TOKEN@host (a Sentry DSN):
		// everything before the @.
		withFollows(userInfoFollows, newRule(`(\bhttps?://)([^/\s@'"\\]+)@`, false, nil, "http://", "https://")),
		withFollows(passwordFollows, newRule(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"\\]*:)([^@\s/'"\\]+)@`, false, schemeStart, "://")),
		// mysql -pPASSWORD (and its kin) inside a script.
		newRule(`(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb)\b[^\n;|&]*?\s-p)([^\s'";|&\\]+)`,
			false, nil, "mysql", "mariadb"),
	}
})

// maskRules masks in s every credential the rules in anyText find,
// each value becoming Redacted.
func maskRules(b []byte) []byte {
	rules := anyText()
	hits := scanKeys(b)
	for i, r := range rules {
		if locs := r.find(b, hits[i]); len(locs) > 0 {
			b = replaceLocs(b, locs, 2)
			hits = scanKeys(b) // the rules after it read the masked text
		}
	}
	return b
}

// anyRule reports whether a credential rule finds something in b.
func anyRule(b []byte) bool {
	hits := scanKeys(b)
	for i, r := range anyText() {
		if len(r.find(b, hits[i])) > 0 {
			return true
		}
	}
	return false
}

// keyScan is the rules' keys laid out for scanKeys: which pairs of bytes
// (ASCII letters in lower case) start one, and the keys that start with
// each pair.
type keyScan struct {
	pair  [1 << 16]uint8 // 0: no key starts so; n: keys[n]
	keys  [][]ruleKey
	rules int
}

// ruleKey is a key of rule n; fold compares it ignoring ASCII case.
type ruleKey struct {
	key  string
	rule int
	fold bool
}

// lowerByte is ASCII's lower case of each byte (others as they are).
var lowerByte = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

func pairOf(a, b byte) uint16 { return uint16(lowerByte[a])<<8 | uint16(lowerByte[b]) }

var scanTable = sync.OnceValue(func() *keyScan {
	t := &keyScan{keys: [][]ruleKey{nil}}
	rules := anyText()
	t.rules = len(rules)
	for n, r := range rules {
		for _, k := range r.keys {
			p := pairOf(k[0], k[1]) // every key has three bytes or more
			if t.pair[p] == 0 {
				t.pair[p] = uint8(len(t.keys))
				t.keys = append(t.keys, nil)
			}
			t.keys[t.pair[p]] = append(t.keys[t.pair[p]], ruleKey{key: k, rule: n, fold: r.fold})
		}
	}
	if len(t.keys) > 255 {
		panic("redact: too many key prefixes for the scan table")
	}
	return t
})

// keyHit is a key found at b[at:at+n].
type keyHit struct{ at, n int }

// scanKeys is, for each rule of anyText, where its keys are in b (in
// order), in one pass over b: a key is looked at only where the two
// bytes that start it are (a table of 64K), so the text is read once
// whatever the number of keys, not once a key.
func scanKeys(b []byte) [][]keyHit {
	t := scanTable()
	hits := make([][]keyHit, t.rules)
	for i := 0; i+1 < len(b); i++ {
		n := t.pair[pairOf(b[i], b[i+1])]
		if n == 0 {
			continue
		}
		for _, k := range t.keys[n] {
			if i+len(k.key) > len(b) {
				continue
			}
			w := b[i : i+len(k.key)]
			if k.fold && equalLower(w, k.key) || !k.fold && string(w) == k.key {
				hits[k.rule] = append(hits[k.rule], keyHit{i, len(k.key)})
			}
		}
	}
	return hits
}

// equalLower reports whether w in ASCII lower case is key (lower case).
func equalLower(w []byte, key string) bool {
	for i := range len(key) {
		if lowerByte[w[i]] != key[i] {
			return false
		}
	}
	return true
}

// find is re.FindAllSubmatchIndex(b, -1), found by running the anchored
// rule only where a key puts the start of a match; at are the keys' places
// in b (scanKeys).
func (r rule) find(b []byte, at []keyHit) [][]int {
	if r.fold && (bytes.Contains(b, kelvin) || bytes.Contains(b, longS)) {
		return r.re.FindAllSubmatchIndex(b, -1) // (?i) folds them to k and s
	}
	var starts []int
	for _, h := range at {
		if r.follows != nil && !r.follows(b, h.at+h.n) {
			continue
		}
		if s := r.from(b, h.at); s >= 0 {
			starts = append(starts, s)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	var locs [][]int
	end := 0
	for n, s := range starts {
		if s < end || n > 0 && s == starts[n-1] {
			continue
		}
		loc := r.anchored.FindSubmatchIndex(b[s:])
		if loc == nil {
			continue
		}
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += s
			}
		}
		if loc[1] == loc[0] {
			continue
		}
		locs = append(locs, loc)
		end = loc[1]
	}
	return locs
}

// kelvin (U+212A) and longS (U+017F) are the two letters outside ASCII
// that (?i) takes for ASCII ones.
var kelvin, longS = []byte("\u212a"), []byte("\u017f")

// isWord is \w.
func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// boundaryAt is a match's start at p, the key's first byte (a word
// character): only after a word boundary.
func boundaryAt(b []byte, p int) int {
	if p > 0 && isWord(b[p-1]) {
		return -1
	}
	return p
}

// wordRunStart is the start of a match of \b[\w-]*KEY: the first word
// character of the run of [\w-] the key ends (the regexp takes the
// leftmost, and any later start in the run is a match from it too).
func wordRunStart(b []byte, p int) int {
	s := p
	for s > 0 && (isWord(b[s-1]) || b[s-1] == '-') {
		s--
	}
	for s < p && !isWord(b[s]) {
		s++
	}
	return s
}

// after is a start at p, or at the optional prefix before it.
func after(prefix string) func([]byte, int) int {
	return func(b []byte, p int) int {
		if n := len(prefix); p >= n && strings.EqualFold(string(b[p-n:p]), prefix) {
			if s := boundaryAt(b, p-n); s >= 0 {
				return s
			}
		}
		return boundaryAt(b, p)
	}
}

// schemeStart is the start of a match of \b[a-zA-Z][a-zA-Z0-9+.-]*:// whose
// "://" is at p: the first letter after a word boundary in the run of
// scheme characters before it.
func schemeStart(b []byte, p int) int {
	s := p
	for s > 0 && (isWord(b[s-1]) && b[s-1] != '_' || b[s-1] == '+' || b[s-1] == '.' || b[s-1] == '-') {
		s--
	}
	for ; s < p; s++ {
		if c := b[s] | 0x20; c >= 'a' && c <= 'z' && (s == 0 || !isWord(b[s-1])) {
			return s
		}
	}
	return -1
}

func withFollows(f func([]byte, int) bool, r rule) rule {
	r.follows = f
	return r
}

// tokenFollows: every token format holds at least 10 more characters of
// [A-Za-z0-9_-] after its prefix.
func tokenFollows(b []byte, end int) bool {
	n := 0
	for end+n < len(b) && n < 10 && (isWord(b[end+n]) || b[end+n] == '-') {
		n++
	}
	return n == 10
}

// nameFollows: a credential's name ends its run of [\w-] and is followed
// by an optional (escaped) quote, spaces and a colon or equals sign.
func nameFollows(b []byte, end int) bool {
	for end < len(b) && (isWord(b[end]) || b[end] == '-') {
		end++
	}
	if end < len(b) && b[end] == '\\' {
		end++
	}
	if end < len(b) && (b[end] == '"' || b[end] == '\'') {
		end++
	}
	for end < len(b) && isSpace(b[end]) {
		end++
	}
	return end < len(b) && (b[end] == ':' || b[end] == '=')
}

// userInfoFollows: https://USERINFO@, userinfo holding none of /, @,
// quotes, backslashes and spaces.
func userInfoFollows(b []byte, end int) bool {
	i := end
	for i < len(b) && !isSpace(b[i]) && !strings.ContainsRune("/@'\"\\", rune(b[i])) {
		i++
	}
	return i > end && i < len(b) && b[i] == '@'
}

// passwordFollows: SCHEME://USER:PASSWORD@.
func passwordFollows(b []byte, end int) bool {
	i := end
	for i < len(b) && !isSpace(b[i]) && !strings.ContainsRune("/:@'\"\\", rune(b[i])) {
		i++
	}
	if i >= len(b) || b[i] != ':' {
		return false
	}
	return userInfoFollows(b, i+1)
}

// isSpace is \s.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// secretFlag is --name VALUE with a secret-looking name, inside a script
// or an environment value (AGENT_OPTS="--api-key X").
var secretFlag = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`((?:^|\s)--?([\w-]+)\s+['"]?)([^\s'"-][^\s'"]*)`) })

// flagText redacts the values of secret-looking --name VALUE flags in s.
func flagText(s string) string {
	return secretFlag().ReplaceAllStringFunc(s, func(m string) string {
		sub := secretFlag().FindStringSubmatch(m)
		if !secretName(sub[2]) || sub[3] == Redacted {
			return m
		}
		return sub[1] + Redacted
	})
}

// mysqlLike reports whether argv0 is a MySQL client, whose -pPASSWORD
// has no space.
func mysqlLike(argv0 string) bool {
	switch strings.TrimSuffix(filepath.Base(argv0), ".exe") {
	case "mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlsh", "mariadb":
		return true
	}
	return false
}
