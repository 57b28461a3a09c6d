package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// LiveUpstream is where live calls to provider go in a fork (or a
// record): the upstream given (ForkOptions.Upstreams), else the base URL
// set in the agent's environment env, else the provider's public API. ""
// for a provider jukebox does not know.
func LiveUpstream(provider string, explicit map[string]string, env []string) string {
	return resolveUpstreams(explicit, envMap(env))[provider]
}

// ForkUpstreams are the upstreams a fork's live calls go to: explicit
// ones, else the agent's environment's, else, for a provider whose
// recorded upstream (the parent's run.start upstreams) is not the public
// API and answers a connection now, that one (a tape recorded against a
// gateway or a local model forks against it, not against the public
// API); the rest the public API. The second value names the providers
// that take their recorded upstream.
func ForkUpstreams(explicit map[string]string, env []string, recorded map[string]string) (map[string]string, []string) {
	public := resolveUpstreams(nil, nil)
	now := resolveUpstreams(explicit, envMap(env))
	out := maps.Clone(explicit)
	if out == nil {
		out = map[string]string{}
	}
	var took []string
	for _, p := range slices.Sorted(maps.Keys(recorded)) {
		rec := recorded[p]
		if _, given := explicit[p]; given || now[p] != public[p] || rec == "" || rec == public[p] || checkBaseURL(rec) != nil {
			continue
		}
		if reachable(rec) {
			out[p] = rec
			took = append(took, p)
		}
	}
	return out, took
}

// reachable says whether the host of base accepts a connection within a
// short while.
func reachable(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	c, err := net.DialTimeout("tcp", host, reachableWait)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// reachableWait bounds the connection reachable tries.
const reachableWait = 500 * time.Millisecond

// maxModelList bounds the body of a model list read.
const maxModelList = 4 << 20

// ListModels asks the upstream base of provider for its models (GET
// /v1/models, OpenAI's shape and Anthropic's both carry data[].id), with
// the API key from env when it is set there. The ids come sorted.
func ListModels(ctx context.Context, provider, base string, env []string) ([]string, error) {
	p, ok := providerByName(provider)
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %s)", provider, providerNames())
	}
	// An OpenAI base URL holds /v1 already (APIPrefix); Anthropic's does not.
	rest := "/v1/models"
	if p.APIPrefix != "" {
		rest = "/models"
	}
	u := upstreamURL(base, rest, "")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if key := envMap(env)[p.KeyEnv]; key != "" {
		if p.Name == "anthropic" {
			req.Header.Set("x-api-key", key)
		} else {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	if p.Name == "anthropic" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: not a model list: %w", u, err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
