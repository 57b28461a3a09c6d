package engine

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// provider is one model API the proxy stands in front of.
type provider struct {
	Name string // openai, anthropic
	// APIPrefix is the part of the API path that the SDK's base URL already
	// holds: OpenAI base URLs end in /v1, Anthropic ones do not.
	APIPrefix string
	// Default is the public upstream base URL.
	Default string
	// BaseEnv are the variables the official SDKs read for the base URL; the
	// first is the one an agent's own setting is taken from.
	BaseEnv []string
	// KeyEnv is the API key variable; in replay a placeholder is set when it
	// is missing so that SDKs start.
	KeyEnv string
}

// providers are the APIs jukebox records.
var providers = []provider{
	{Name: "openai", APIPrefix: "/v1", Default: "https://api.openai.com/v1",
		BaseEnv: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"}, KeyEnv: "OPENAI_API_KEY"},
	{Name: "anthropic", APIPrefix: "", Default: "https://api.anthropic.com",
		BaseEnv: []string{"ANTHROPIC_BASE_URL"}, KeyEnv: "ANTHROPIC_API_KEY"},
}

// providerByName finds a provider.
func providerByName(name string) (provider, bool) {
	for _, p := range providers {
		if p.Name == name {
			return p, true
		}
	}
	return provider{}, false
}

// route is the proxy path prefix the child's base URL for p points at.
func (p provider) route() string { return "/" + p.Name + p.APIPrefix }

// ParseUpstreams reads NAME=URL pairs into a map, checking that each name is
// a known provider and each URL is absolute http(s). An error quotes the
// pair; the caller says where the pairs came from.
func ParseUpstreams(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range pairs {
		name, raw, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME=URL, e.g. openai=http://127.0.0.1:8931/v1", pair)
		}
		if _, known := providerByName(name); !known {
			return nil, fmt.Errorf("%q: unknown provider %q (known: %s)", pair, name, providerNames())
		}
		if err := checkFlagURL(raw); err != nil {
			return nil, fmt.Errorf("%q: %w", pair, err)
		}
		out[name] = strings.TrimRight(raw, "/")
	}
	return out, nil
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	return nil
}

// checkFlagURL is checkBaseURL for a URL the user gives on the command
// line (--upstream, --route), where a typo is theirs to fix: a host with
// a colon and no port went to the scheme's port (80) unsaid.
func checkFlagURL(raw string) error {
	if err := checkBaseURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if u.Hostname() == "" {
		return fmt.Errorf("%q names no host", raw)
	}
	if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%q has a colon but no port after it: write the port, or no colon for the scheme's own", raw)
	}
	return nil
}

func providerNames() string {
	var names []string
	for _, p := range providers {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// resolveUpstreams decides where each provider's calls go when recording:
// an explicit upstream (RecordOptions.Upstreams) wins, then a base URL already set in the agent's
// environment, then the public default.
func resolveUpstreams(explicit map[string]string, env map[string]string) map[string]string {
	out := map[string]string{}
	for _, p := range providers {
		out[p.Name] = p.Default
		for _, name := range p.BaseEnv {
			if v := env[name]; v != "" && checkBaseURL(v) == nil {
				out[p.Name] = strings.TrimRight(v, "/")
				break
			}
		}
		if v, ok := explicit[p.Name]; ok {
			out[p.Name] = v
		}
	}
	return out
}
