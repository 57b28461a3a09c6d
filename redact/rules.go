package redact

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// A rule finds a credential: group 2 of re is the value masked, group 1
// what stays before it (a rule whose re has one group masks the match).
type rule struct {
	re *regexp.Regexp
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
		{regexp.MustCompile(`\b()(sk-(?:proj-|ant-|live-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35})`)},
		// "api_key": "X", client_secret=X, x-api-key: X; aws_secret_access_key X.
		{regexp.MustCompile(`(?i)(\b[\w-]*(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?key|client[_-]?secret|private[_-]?key|password|passwd|passphrase|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token)` + quote + `\s*[:=]\s*` + quote + `)([^\s'"\\,;}&)]+)`)},
		{regexp.MustCompile(`(?i)(\baws_(?:secret_access_key|session_token)` + quote + `\s+` + quote + `)([^\s'"\\,;}&)]+)`)},
		// Authorization: Bearer X, and a cookie header's whole value.
		{regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization` + quote + `\s*[:=]\s*` + quote + `(?:(?:bearer|basic|token|digest)\s+)?)([^\s'"\\,}]+)`)},
		{regexp.MustCompile(`(?i)(\b(?:set-)?cookie` + quote + `\s*:\s*` + quote + `)([^'"\\\r\n]+)`)},
		// https://user:password@host and https://TOKEN@host (a Sentry DSN):
		// everything before the @.
		{regexp.MustCompile(`(\bhttps?://)([^/\s@'"\\]+)@`)},
		{regexp.MustCompile(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"\\]*:)([^@\s/'"\\]+)@`)},
		// mysql -pPASSWORD (and its kin) inside a script.
		{regexp.MustCompile(`(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb)\b[^\n;|&]*?\s-p)([^\s'";|&\\]+)`)},
	}
})

// maskRules masks in s every credential the rules in anyText find,
// each value becoming Redacted.
func maskRules(b []byte) []byte {
	for _, r := range anyText() {
		b = replaceAll(b, r.re, 2)
	}
	return b
}

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
