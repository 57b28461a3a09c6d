package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// DemoModelCmd serves the scripted model (internal/llmsim) so agents and the
// demo can run offline against OpenAI- and Anthropic-compatible APIs.
type DemoModelCmd struct {
	Addr   string `default:"127.0.0.1:8931" help:"Address to listen on (port 0 picks a free one)."`
	Script string `type:"path" placeholder:"FILE" help:"Script file (JSON, see internal/llmsim); default: the bundled demo script."`
	Quiet  bool   `help:"Do not log each request to stderr."`
	JSON   bool   `help:"Print the URLs as one JSON object instead of KEY=VALUE lines."`

	ready chan<- string // tests: gets the root URL once the server listens
}

// demoModelURLs is what the command prints for agents to use.
type demoModelURLs struct {
	URL              string `json:"url"`
	OpenAIBaseURL    string `json:"openai_base_url"`
	AnthropicBaseURL string `json:"anthropic_base_url"`
}

// Run serves until ctx is cancelled (by SIGINT or SIGTERM), printing the
// base URLs to stdout.
func (c *DemoModelCmd) Run(ctx context.Context, env *Env) error {
	script, name, err := c.load()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	var opts []llmsim.Option
	if !c.Quiet {
		opts = append(opts, llmsim.WithLog(env.Stderr))
	}
	srv, url, err := llmsim.Start(c.Addr, script, opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	urls := demoModelURLs{URL: url, OpenAIBaseURL: srv.OpenAIBaseURL(), AnthropicBaseURL: srv.AnthropicBaseURL()}
	if err := c.print(env, urls, name, script.Len()); err != nil {
		return err
	}
	if c.ready != nil {
		c.ready <- url
	}
	<-ctx.Done()
	shutdown, done := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer done()
	if err := srv.Shutdown(shutdown); err != nil {
		return srv.Close()
	}
	return nil
}

// load reads the script flag, or the bundled demo script without one.
func (c *DemoModelCmd) load() (*llmsim.Script, string, error) {
	if c.Script == "" {
		return llmsim.DefaultScript(), "the bundled demo script", nil
	}
	s, err := llmsim.LoadScript(c.Script)
	return s, c.Script, err
}

func (c *DemoModelCmd) print(env *Env, urls demoModelURLs, name string, rules int) error {
	fmt.Fprintf(env.Stderr, "jukebox demo-model: %s (%d rules) on %s; any API key works; Ctrl-C stops\n", name, rules, urls.URL)
	if c.JSON {
		return writeJSON(env.Stdout, urls)
	}
	_, err := fmt.Fprintf(env.Stdout, "OPENAI_BASE_URL=%s\nANTHROPIC_BASE_URL=%s\n", urls.OpenAIBaseURL, urls.AnthropicBaseURL)
	return err
}
