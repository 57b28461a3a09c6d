package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/kong"

	"github.com/jukebox-os/jukebox/engine"
)

// TestCommitPolicyFlags checks that --commit offers exactly the engine's
// commit policies (a struct tag cannot name the constants) and that kong
// fills the typed field.
func TestCommitPolicyFlags(t *testing.T) {
	t.Parallel()
	policies := []engine.CommitPolicy{engine.CommitAsk, engine.CommitOnSuccess, engine.CommitAlways, engine.CommitNever}
	slices.Sort(policies)
	for _, typ := range []reflect.Type{reflect.TypeFor[boothFlags](), reflect.TypeFor[ForkCmd]()} {
		f, ok := typ.FieldByName("Commit")
		if !ok || f.Type != reflect.TypeFor[engine.CommitPolicy]() {
			t.Errorf("%s.Commit is not an engine.CommitPolicy", typ.Name())
			continue
		}
		var offered []engine.CommitPolicy
		for _, v := range strings.Split(f.Tag.Get("enum"), ",") {
			offered = append(offered, engine.CommitPolicy(v))
		}
		slices.Sort(offered)
		if !slices.Equal(offered, policies) {
			t.Errorf("%s --commit offers %q, the engine's policies are %q", typ.Name(), offered, policies)
		}
	}
	var cli struct {
		B boothFlags `embed:""`
	}
	parser := kong.Must(&cli)
	if _, err := parser.Parse([]string{"--booth", "--commit", "on-success"}); err != nil || cli.B.Commit != engine.CommitOnSuccess {
		t.Errorf("--commit on-success parsed as %q, %v", cli.B.Commit, err)
	}
	if _, err := parser.Parse([]string{"--commit", "sometimes"}); err == nil {
		t.Error("--commit sometimes was accepted")
	}
}
