package main

import (
	"fmt"
	"reflect"

	"github.com/jukebox-os/jukebox/internal/kong"

	"github.com/jukebox-os/jukebox/engine"
)

// upstreams is --upstream NAME=URL (record, replay, fork, play): where a
// provider's live calls go, by provider name. kong fills it through
// upstreamsMapper as it reads the command line, so a bad pair is a usage
// error that names the flag, and Run gets the parsed map.
type upstreams map[string]string

// upstreamsMapper decodes each --upstream: comma-separated NAME=URL pairs
// (a comma inside a URL is written \,), repeatable, a later pair for the
// same provider winning, as kong's own []string decoder split them before.
type upstreamsMapper struct{}

// withUpstreams registers upstreamsMapper with kong.
func withUpstreams() kong.Option {
	return kong.TypeMapper(reflect.TypeFor[upstreams](), upstreamsMapper{})
}

// Decode adds the pairs of one --upstream to the map.
func (upstreamsMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var value string
	if err := ctx.Scan.PopValueInto("string", &value); err != nil {
		return err
	}
	pairs := []string{value}
	if sep := ctx.Value.Tag.Sep; sep != -1 {
		pairs = kong.SplitEscaped(value, sep)
	}
	parsed, err := engine.ParseUpstreams(pairs)
	if err != nil {
		return err
	}
	if target.IsNil() {
		target.Set(reflect.MakeMap(target.Type()))
	}
	for name, url := range parsed {
		target.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(url))
	}
	return nil
}

// PlaceHolder keeps the help text kong printed for the []string flag:
// --upstream=NAME=URL,...
func (upstreamsMapper) PlaceHolder(flag *kong.Flag) string {
	if sep := flag.Tag.Sep; sep != -1 {
		return fmt.Sprintf("%s%c...", flag.PlaceHolder, sep)
	}
	return flag.PlaceHolder
}
