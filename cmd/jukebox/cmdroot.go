package main

import (
	"reflect"
	"strings"

	"github.com/jukebox-os/jukebox/internal/kong"
)

// oneCommand is the command line with the shared flags and a single
// command: kong builds its model by reflection over every command and
// flag it is given before it parses anything (about 1.8 MB allocated for
// the whole CLI, a quarter of a command's start-up), so a command line
// that names its command first gets a model of that command alone.
type oneCommand struct {
	Globals
	kong.Plugins // the command's field, in a struct of its own
}

func (c *oneCommand) globals() *Globals { return &c.Globals }

// commandLine is what kong parses args against: the globals and the one
// command args[0] names, else (no command first, --help, a typo that
// wants suggestions) the whole CLI.
func commandLine(args []string) any {
	if len(args) == 0 {
		return &CLI{}
	}
	t := reflect.TypeFor[CLI]()
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); !isCmd || commandName(f) != args[0] {
			continue
		}
		one := reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}})
		return &oneCommand{Plugins: kong.Plugins{reflect.New(one).Interface()}}
	}
	return &CLI{}
}

// commandName is the name kong gives the command field f: its name tag,
// else the field's name in lower case (CLI's multi-word commands carry a
// name tag; TestOneCommandLine holds the two together).
func commandName(f reflect.StructField) string {
	if name := f.Tag.Get("name"); name != "" {
		return name
	}
	return strings.ToLower(f.Name)
}
