package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// HostPatterns are the hosts a replay lets through live (replay --live):
// names or globs in path.Match syntax ("api.github.com",
// "*.githubusercontent.com"), lower case. A pattern with a port matches
// host:port; one without matches the host on any port.
type HostPatterns []string

// ParseHostPatterns reads HOST[,HOST...] lists into patterns; an error
// quotes the pattern at fault.
func ParseHostPatterns(lists []string) (HostPatterns, error) {
	var out HostPatterns
	for _, list := range lists {
		for _, p := range strings.Split(list, ",") {
			p = strings.ToLower(strings.TrimSpace(p))
			if p == "" || strings.ContainsAny(p, "/ ") {
				return nil, fmt.Errorf("%q: want a host name or a glob such as *.example.com", p)
			}
			if _, err := path.Match(p, ""); err != nil {
				return nil, fmt.Errorf("%q: %w", p, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// Match reports whether host (host[:port]) is one the patterns name.
func (h HostPatterns) Match(host string) bool {
	host = strings.ToLower(host)
	bare := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		bare = host[:i]
	}
	for _, p := range h {
		target := bare
		if strings.Contains(p, ":") {
			target = host
		}
		if ok, _ := path.Match(p, target); ok {
			return true
		}
	}
	return false
}

// exchangeHost is the host a request goes to: the one the agent asked for,
// or for a model call through a base URL, its provider's upstream's.
func exchangeHost(x *exchange, upstreams map[string]string) string {
	if x.host != "" {
		return x.host
	}
	return upstreamHost(upstreams, x.provider.Name)
}

// upstreamHost is the host of a provider's upstream base URL, or "".
func upstreamHost(upstreams map[string]string, provider string) string {
	if u, err := url.Parse(upstreams[provider]); err == nil {
		return u.Host
	}
	return ""
}

// telemetryEndpoints are where SDKs send their own traces and telemetry
// (see QuietSDKEnv): host, and the path prefix ("" for any path). Replay
// and fork answer them locally, whatever the tape holds.
var telemetryEndpoints = []struct{ host, path string }{
	{"api.openai.com", "/v1/traces/ingest"}, // OpenAI Agents SDK
	{"api.smith.langchain.com", ""},         // LangSmith
	{"eu.api.smith.langchain.com", ""},
	{"telemetry.crewai.com", ""}, // CrewAI
	{"us.i.posthog.com", ""},     // Chroma and others
	{"eu.i.posthog.com", ""},
	{"app.posthog.com", ""},
	{"huggingface.co", "/api/telemetry/"}, // Hugging Face Hub
}

// telemetry reports whether x goes to a known SDK telemetry endpoint (an
// OpenAI base URL's traces path included).
func telemetry(x *exchange) bool { return isTelemetry(x.scheme, x.host, x.provider.Name, x.path) }

func isTelemetry(scheme, host, provider, path string) bool {
	host = normHost(scheme, host)
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	if host == "" && provider == "openai" {
		host = "api.openai.com"
	}
	for _, e := range telemetryEndpoints {
		if host == e.host && strings.HasPrefix(path, e.path) {
			return true
		}
	}
	return false
}

// answerLocally answers a telemetry request as its collector would, with
// nothing sent.
func answerLocally(w http.ResponseWriter) answer {
	body := []byte("{}")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return answer{resp: tapefmt.LLMResponse{Status: http.StatusOK, Size: int64(len(body)),
		Header: http.Header{"Content-Type": {"application/json"}}}, body: body}
}

// openWorld is what a replay or a fork answers without the tape: SDK
// telemetry locally, and requests to the hosts the user let through live.
type openWorld struct {
	hosts     HostPatterns
	upstreams map[string]string
	live      backend
}

// respond answers x if it is telemetry or goes to a host let through,
// reporting whether it did, and how.
func (o *openWorld) respond(w http.ResponseWriter, x *exchange) (a answer, how outside, ok bool) {
	switch {
	case telemetry(x):
		return answerLocally(w), outsideLocal, true
	case o != nil && len(o.hosts) > 0 && o.hosts.Match(exchangeHost(x, o.upstreams)):
		return o.live.respond(w, x), outsideLive, true
	}
	return answer{}, 0, false
}

// outside says how a request off the tape was answered.
type outside int

const (
	outsideLocal outside = iota + 1 // telemetry, answered by jukebox
	outsideLive                     // a --live host, sent live
)

// exempt reports whether a recorded call is one replay does not answer
// from the tape (telemetry, a --live host), so it is not counted unused.
func (o *openWorld) exempt(c *Call) bool {
	q := c.Request
	if isTelemetry(q.Scheme, q.Host, q.Provider, q.Path) {
		return true
	}
	if o == nil || len(o.hosts) == 0 {
		return false
	}
	host := q.Host
	if host == "" {
		host = upstreamHost(o.upstreams, q.Provider)
	}
	return o.hosts.Match(host)
}
