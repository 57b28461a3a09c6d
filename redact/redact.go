package redact

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// secretHeader reports whether an HTTP header may carry a credential: the
// names secretName flags, and cookies.
func secretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "cookie", "set-cookie":
		return true
	}
	return secretName(name)
}

// SecretName reports whether a query parameter or environment variable
// name looks like a credential (api_key, X-Amz-Signature, sig, token...).
func SecretName(name string) bool { return secretName(name) }

// secretName reports whether a query parameter or environment variable name
// looks like a credential.
func secretName(name string) bool {
	n := strings.ToLower(name)
	if n == "key" || n == "sig" || n == "code" {
		return true
	}
	if strings.HasSuffix(n, "tokens") {
		return false // a count: max_tokens, --max-tokens
	}
	for _, part := range []string{"key", "token", "secret", "password", "passwd", "passphrase", "cred", "signature", "auth", "bearer"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// Header returns a copy of h without the headers that may carry secrets.
func Header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, v := range h {
		if !secretHeader(k) {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// Query drops the parameters of a raw query that may carry secrets.
// A query that does not parse is dropped whole: it cannot be checked.
func Query(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return ""
	}
	dropped := false
	for k := range q {
		if secretName(k) {
			q.Del(k)
			dropped = true
		}
	}
	if !dropped {
		return raw // kept byte for byte
	}
	return q.Encode()
}

// URL drops the secrets from a URL's query and its user info. A URL
// that does not parse is dropped whole.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = Query(u.RawQuery)
	return u.String()
}

// Env returns a copy of env without variables whose names look secret.
func Env(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if !secretName(k) {
			out[k] = v
		}
	}
	return out
}

// Redacted stands where a secret was, so that an argv keeps its shape.
const Redacted = "[redacted]"

// Argv replaces the values of command-line flags whose names look
// secret ("--api-key X", "--api-key=X", "-token X", "--bearer=X", "-k X"),
// then credentials inside any argument (Text), shell scripts
// included.
func Argv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := append([]string(nil), argv...)
	for i := 0; i < len(out); i++ {
		arg := out[i]
		if awsSecret(arg) && i+1 < len(out) { // aws configure set NAME VALUE
			out[i+1] = Redacted
			i++
			continue
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case secretName(name) || arg == "-k": // -k KEY
			if hasValue {
				out[i] = arg[:strings.Index(arg, "=")+1] + Redacted
			} else if i+1 < len(out) {
				out[i+1] = Redacted
				i++
			}
		case strings.HasPrefix(arg, "-p") && len(arg) > 2 && mysqlLike(out[0]): // mysql -pPASSWORD
			out[i] = "-p" + Redacted
		case arg == "-u" || name == "user": // curl's -u USER:PASSWORD
			if hasValue {
				out[i] = arg[:strings.Index(arg, "=")+1] + redactPassword(value)
			} else if i+1 < len(out) {
				out[i+1] = redactPassword(out[i+1])
				i++
			}
		}
	}
	for i, arg := range out {
		out[i] = Text(arg)
	}
	return out
}

// awsSecret reports whether arg names an AWS secret setting.
func awsSecret(arg string) bool {
	return strings.EqualFold(arg, "aws_secret_access_key") || strings.EqualFold(arg, "aws_session_token")
}

// redactPassword redacts the password of USER:PASSWORD.
func redactPassword(v string) string {
	if user, _, ok := strings.Cut(v, ":"); ok {
		return user + ":" + Redacted
	}
	return v
}

// Credentials as they appear inside free text: an argument, a shell
// script, an environment variable's value. Compiled on first use: a
// command that keeps no tape does not pay for them at start-up.
var (
	// Authorization: Bearer X; x-api-key: X; "api_key": "X"; X-Signature:
	// X (a name that ends in key, token, secret, password, signature or
	// credential, before a colon).
	headerCredential = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?|[\w-]*(?:key|token|secret|password|signature|credential)["']?\s*:\s*["']?)([^\s'"\\,}]+)`)
	})
	// Bearer X anywhere.
	bearerCredential = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})`) })
	// scheme://user:password@host: the password.
	userinfoCredential = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"]*:)([^@\s/'"]+)(@)`)
	})
	// -u USER:PASSWORD inside a script (curl).
	userCredential = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`((?:^|\s)(?:-u|--user)[\s=]+['"]?[^\s:'"]+:)([^\s'"]+)`)
	})
	// name=value where the name looks secret (a query, a libpq DSN,
	// --api-key=X inside a script), and a query's sig= (an Azure SAS) and
	// code= (an Azure Functions key, an OAuth code), as secretName has it.
	paramCredential = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)((?:(?:^|[?&;\s'"(])-*[\w.-]*(?:key|token|secret|password|passwd|passphrase|signature|credential|auth)[\w.-]*|[?&;](?:sig|code))=)([^\s&'";)]+)`)
	})
)

// Text replaces the credentials found inside s (Argv's
// patterns: authorization headers, bearer tokens, passwords in URLs,
// secret-looking name=value pairs and --name VALUE flags, and the rules
// that hold in any text) with Redacted.
func Text(s string) string {
	for _, re := range []*regexp.Regexp{headerCredential(), bearerCredential(), paramCredential(), userCredential()} {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if sub[2] == Redacted {
				return m
			}
			return sub[1] + Redacted
		})
	}
	s = userinfoCredential().ReplaceAllString(s, "${1}"+Redacted+"${3}")
	return string(maskRules([]byte(flagText(s))))
}

// RedactedArg is the index of the first argument in argv that holds
// Redacted, or -1: a command recorded that way cannot be run again as it
// was.
func RedactedArg(argv []string) int {
	for i, a := range argv {
		if strings.Contains(a, Redacted) {
			return i
		}
	}
	return -1
}
