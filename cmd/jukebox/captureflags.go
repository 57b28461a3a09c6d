package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/engine"
)

// captureFlags say where the agent's forwarded requests go (record,
// replay, fork): --route sends a host elsewhere, recorded under the host
// the agent asked for; --upstream-ca replaces the system's roots for
// upstream TLS. Validate parses them once; apply hands them to the run.
type captureFlags struct {
	Route      []string `sep:"none" placeholder:"HOST=URL" help:"Send the agent's requests to HOST (a name, or name:port) to URL instead (a staging server, a local model, a test double), recorded under HOST, e.g. api.openai.com=http://127.0.0.1:8931. Repeatable."`
	UpstreamCA string   `name:"upstream-ca" type:"existingfile" placeholder:"FILE" help:"PEM certificates to verify upstream TLS with, instead of the system's roots."`

	opts engine.RunOptions // Routes and UpstreamRoots, once validated
}

// validate parses --route and reads --upstream-ca, naming the flag and
// the value at fault.
func (c *captureFlags) validate() error {
	routes, err := engine.ParseRoutes(c.Route)
	if err != nil {
		return fmt.Errorf("--route %w", err)
	}
	c.opts.Routes = routes
	if c.UpstreamCA != "" {
		if c.opts.UpstreamRoots, err = engine.LoadUpstreamCA(c.UpstreamCA); err != nil {
			return fmt.Errorf("--upstream-ca %w", err)
		}
	}
	return nil
}

// apply gives o the parsed routes and roots.
func (c *captureFlags) apply(o *engine.RunOptions) {
	o.Routes, o.UpstreamRoots = c.opts.Routes, c.opts.UpstreamRoots
}
