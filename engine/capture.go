package engine

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"

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
		if err := checkFlagURL(raw); err != nil {
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
// variables at itself: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY (for a scheme
// the first two leave unset) and NO_PROXY (either case).
// Loopback is never proxied.
func userProxy(env []string) func(*http.Request) (*url.URL, error) {
	m := envMap(env)
	get := func(name string) string {
		if v := m[name]; v != "" {
			return v
		}
		return m[strings.ToLower(name)]
	}
	all := get("ALL_PROXY") // curl's convention, often socks5://, which Go's transport speaks
	cfg := &httpproxy.Config{HTTPProxy: cmp.Or(get("HTTP_PROXY"), all), HTTPSProxy: cmp.Or(get("HTTPS_PROXY"), all), NoProxy: get("NO_PROXY")}
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

// hostLocalGuard refuses, as the dialer's Control, a connection to this
// machine's own addresses (loopback, unspecified, any of its interfaces'
// addresses) but those in allowed: whatever name a booth's agent asked
// for, it reaches none of the host's local services through jukebox.
func hostLocalGuard(allowed map[string]bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		host, port, err := net.SplitHostPort(address)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || allowed[net.JoinHostPort(ip.String(), port)] {
			return nil
		}
		if ip.IsLoopback() || ip.IsUnspecified() || ownAddrs()[ip.String()] {
			return fmt.Errorf("the booth's agent may not reach this machine's own address %s through jukebox", address)
		}
		return nil
	}
}

// ownAddrs are the addresses of this machine's interfaces.
var ownAddrs = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			m[n.IP.String()] = true
		}
	}
	return m
})

// allowedLocal are the local addresses a booth run may reach because the
// user named them: its providers' upstreams, its routes and the user's
// own proxy, as ip:port (localhost standing for its loopback addresses).
func allowedLocal(upstreams, routes map[string]string, env []string) map[string]bool {
	m := envMap(env)
	var urls []string
	for _, u := range upstreams {
		urls = append(urls, u)
	}
	for _, u := range routes {
		urls = append(urls, u)
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		urls = append(urls, m[k])
	}
	allowed := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		hosts := []string{u.Hostname()}
		if u.Hostname() == "localhost" {
			hosts = []string{"127.0.0.1", "::1"}
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				allowed[net.JoinHostPort(ip.String(), port)] = true
			}
		}
	}
	return allowed
}
