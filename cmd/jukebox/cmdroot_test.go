package main

import (
	"testing"

	"github.com/jukebox-os/jukebox/internal/kong"
)

// TestOneCommandLine: every command of the CLI, named first, is parsed
// against a model of that command alone, and its help there is the help
// the whole CLI's model gives (jukebox --help CMD).
func TestOneCommandLine(t *testing.T) {
	parser, err := kong.New(&CLI{}, kong.Name("jukebox"))
	if err != nil {
		t.Fatal(err)
	}
	if len(parser.Model.Children) < 10 {
		t.Fatalf("the CLI's model has %d commands", len(parser.Model.Children))
	}
	for _, cmd := range parser.Model.Children {
		if _, ok := commandLine([]string{cmd.Name, "--help"}).(*oneCommand); !ok {
			t.Errorf("%s: not parsed against its own model (commandName does not name it so)", cmd.Name)
			continue
		}
		one, _ := wantCode(t, 0, cmd.Name, "--help")
		whole, _ := wantCode(t, 0, "--help", cmd.Name)
		if one != whole {
			t.Errorf("jukebox %s --help differs from jukebox --help %s:\n%s\n---\n%s", cmd.Name, cmd.Name, one, whole)
		}
	}
	if _, ok := commandLine([]string{"--prices", "p.json", "ls"}).(*CLI); !ok {
		t.Error("a command line that starts with a flag is not parsed against the whole CLI")
	}
}
