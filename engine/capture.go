package engine

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// ParseRoutes reads --route HOST=URL pairs: the requests the agent makes
// to HOST (a name, or name:port) go to URL instead, an absolute http(s)
// URL whose path, if any, is put before the request's. An error quotes the
// pair; the caller names the flag.
func ParseRoutes(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range pairs {
		host, raw, ok := strings.Cut(pair, "=")
		host = strings.ToLower(strings.TrimSpace(host))
		switch {
		case !ok || host == "" || strings.ContainsAny(host, "/?#@ "):
			return nil, fmt.Errorf("%q: want HOST=URL, e.g. api.openai.com=http://127.0.0.1:8931", pair)
		case out[host] != "":
			return nil, fmt.Errorf("%q: host %s is routed twice", pair, host)
		}
		if err := checkBaseURL(raw); err != nil {
			return nil, fmt.Errorf("%q: %w", pair, err)
		}
		out[host] = strings.TrimRight(raw, "/")
	}
	return out, nil
}

// lookupRoute finds host's route: host[:port] as recorded, then the name
// alone.
func lookupRoute(routes map[string]string, host string) (string, bool) {
	if u, ok := routes[host]; ok {
		return u, true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		u, ok := routes[strings.Trim(h, "[]")]
		return u, ok
	}
	return "", false
}

// LoadUpstreamCA reads a PEM file of the certificates upstream TLS is
// verified with (--upstream-ca), in place of the system's roots.
func LoadUpstreamCA(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

// userProxy is the user's own proxy for jukebox's upstream requests, from
// the agent's environment as it was before jukebox pointed the proxy
// variables at itself: HTTPS_PROXY, HTTP_PROXY and NO_PROXY (either case).
// Loopback is never proxied.
func userProxy(env []string) func(*http.Request) (*url.URL, error) {
	m := envMap(env)
	get := func(name string) string {
		if v := m[name]; v != "" {
			return v
		}
		return m[strings.ToLower(name)]
	}
	cfg := &httpproxy.Config{HTTPProxy: get("HTTP_PROXY"), HTTPSProxy: get("HTTPS_PROXY"), NoProxy: get("NO_PROXY")}
	f := cfg.ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return f(r.URL) }
}

// isLocalHost says whether host[:port] names this machine: localhost, a
// loopback or unspecified address.
func isLocalHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}
