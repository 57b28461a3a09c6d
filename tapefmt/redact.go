package tapefmt

import (
	"net/http"
	"net/url"
	"strings"
)

// Secrets never reach the tape. The writer passes every payload through
// redacted() before encoding it: this is the one place where that happens.

// redacter is a payload that can carry secrets.
type redacter interface {
	redacted() Payload
}

// secretHeader reports whether an HTTP header may carry a credential: the
// names secretName flags, and cookies.
func secretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "cookie", "set-cookie":
		return true
	}
	return secretName(name)
}

// secretName reports whether a query parameter or environment variable name
// looks like a credential.
func secretName(name string) bool {
	n := strings.ToLower(name)
	if n == "key" || n == "sig" || n == "code" {
		return true
	}
	for _, part := range []string{"key", "token", "secret", "password", "passwd", "credential", "signature", "auth"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// RedactHeader returns a copy of h without the headers that may carry secrets.
func RedactHeader(h http.Header) http.Header {
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

// RedactQuery drops the parameters of a raw query that may carry secrets.
// A query that does not parse is dropped whole: it cannot be checked.
func RedactQuery(raw string) string {
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

// RedactURL drops the secrets from a URL's query and its user info. A URL
// that does not parse is dropped whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = RedactQuery(u.RawQuery)
	return u.String()
}

// RedactEnv returns a copy of env without variables whose names look secret.
func RedactEnv(env map[string]string) map[string]string {
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

// redactedValue stands where a secret was, so that an argv keeps its shape.
const redactedValue = "[redacted]"

// RedactArgv replaces the values of command-line flags whose names look
// secret: "--api-key X", "--api-key=X", "-token X".
func RedactArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := append([]string(nil), argv...)
	for i := 0; i < len(out); i++ {
		arg := out[i]
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !secretName(name) {
			continue
		}
		if hasValue {
			out[i] = arg[:strings.Index(arg, "=")+1] + redactedValue
		} else if i+1 < len(out) {
			out[i+1] = redactedValue
			i++
		}
	}
	return out
}

func (p RunStart) redacted() Payload {
	p.Env = RedactEnv(p.Env)
	p.Argv = RedactArgv(p.Argv)
	if p.Upstream != nil {
		ups := make(map[string]string, len(p.Upstream))
		for k, v := range p.Upstream {
			ups[k] = RedactURL(v)
		}
		p.Upstream = ups
	}
	return p
}

func (p LLMRequest) redacted() Payload {
	p.Header = RedactHeader(p.Header)
	p.Query = RedactQuery(p.Query)
	return p
}

func (p LLMResponse) redacted() Payload {
	p.Header = RedactHeader(p.Header)
	return p
}
