package engine

import (
	"net"
	"net/http"
	"strings"

	"github.com/jukebox-os/jukebox/llmwire"
)

// forwarded makes the exchange of a request the agent sent to jukebox as
// to an HTTP proxy (an absolute-form target, http://host/path): a model
// call when llmwire.Recognize knows its host and path, else plain HTTP;
// ok is false for any other request. A stand-in for the forward proxy's
// front end, so that replay can be driven end to end through the proxy
// variables; the front end replaces it.
func forwarded(r *http.Request) (*exchange, bool) {
	if !r.URL.IsAbs() || r.URL.Host == "" || toJukebox(r) {
		return nil, false
	}
	x := &exchange{path: r.URL.Path, rest: r.URL.Path, query: r.URL.RawQuery, scheme: r.URL.Scheme,
		host: r.URL.Host, req: r, plain: true}
	if rec, ok := llmwire.Recognize(r.URL.Host, r.URL.Path); ok {
		if pr, ok := providerByName(rec.Provider); ok {
			x.provider, x.plain = pr, false
		}
	}
	return x, true
}

// toJukebox reports whether an absolute-form request names jukebox's own
// routes on a loopback address (a base URL pointed at jukebox, reached
// through a proxy setting or an in-process client): it is routed as such.
func toJukebox(r *http.Request) bool {
	host := r.URL.Hostname()
	if ip := net.ParseIP(host); !(host == "localhost" || ip != nil && ip.IsLoopback()) {
		return false
	}
	for _, pr := range providers {
		if strings.HasPrefix(r.URL.Path, pr.route()+"/") {
			return true
		}
	}
	return false
}
