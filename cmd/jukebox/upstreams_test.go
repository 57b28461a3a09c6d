package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/kong"
)

const sampleTape = "../../testdata/tapes/agent-run.jbx"

// parseCLI reads args into a CLI as run does, without running the command.
func parseCLI(t *testing.T, args ...string) (*CLI, error) {
	t.Helper()
	var cli CLI
	parser, err := kong.New(&cli, kong.Name("jukebox"), withUpstreams(), withTapes(), kong.Exit(func(int) { t.Fatal("kong exited") }))
	if err != nil {
		t.Fatal(err)
	}
	_, err = parser.Parse(args)
	return &cli, err
}

// TestUpstreamsParsedOnce: every command's --upstream arrives as the map
// Run uses, repeated and comma-separated pairs merged, a later pair for
// the same provider winning, trailing slashes trimmed.
func TestUpstreamsParsedOnce(t *testing.T) {
	t.Parallel()
	ups := []string{"--upstream", "openai=http://127.0.0.1:1/v1/", "--upstream", "anthropic=https://gw.example/a,openai=http://127.0.0.1:2/v1"}
	want := upstreams{"openai": "http://127.0.0.1:2/v1", "anthropic": "https://gw.example/a"}
	for _, tc := range []struct {
		args []string
		got  func(*CLI) upstreams
	}{
		{append(append([]string{"record"}, ups...), "--", "true"), func(c *CLI) upstreams { return c.Record.Upstream }},
		{append(append([]string{"replay", "--on-divergence", "live"}, ups...), sampleTape), func(c *CLI) upstreams { return c.Replay.Upstream }},
		{append(append([]string{"fork", "--frame", "1", "--no-booth"}, ups...), sampleTape), func(c *CLI) upstreams { return c.Fork.Upstream }},
		{append([]string{"play"}, append(ups, sampleTape)...), func(c *CLI) upstreams { return c.Play.Upstream }},
	} {
		cli, err := parseCLI(t, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.args[0], err)
		}
		if got := tc.got(cli); !maps.Equal(got, want) {
			t.Errorf("%s: --upstream gave %v, want %v", tc.args[0], got, want)
		}
	}
}

// TestUpstreamsRefused: a bad pair is a usage error (exit 2) that names
// the flag and the pair.
func TestUpstreamsRefused(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"nonsense", "nobody=http://127.0.0.1:1", "openai=ftp://x", "openai=/v1", "openai=http://127.0.0.1:1,bad"} {
		code, _, errs := jb(t, "record", "--upstream", bad, "--", "true")
		if code != ExitUsage || !strings.Contains(errs, "--upstream") {
			t.Errorf("--upstream %s: exit %d, want %d and an error naming --upstream\n%s", bad, code, ExitUsage, errs)
		}
		quoted := bad
		if i := strings.LastIndexByte(bad, ','); i >= 0 {
			quoted = bad[i+1:]
		}
		if !strings.Contains(errs, `"`+quoted+`"`) {
			t.Errorf("--upstream %s: the error does not quote %q\n%s", bad, quoted, errs)
		}
	}
}
