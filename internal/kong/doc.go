// Package kong aims to support arbitrarily complex command-line structures with as little developer effort as possible.
//
// Here's an example:
//
//	shell rm [-f] [-r] <paths> ...
//	shell ls [<paths> ...]
//
// This can be represented by the following command-line structure:
//
//	package main
//
//	import "github.com/alecthomas/kong"
//
//	var CLI struct {
//	  Rm struct {
//	    Force     bool `short:"f" help:"Force removal."`
//	    Recursive bool `short:"r" help:"Recursively remove files."`
//
//	    Paths []string `arg help:"Paths to remove." type:"path"`
//	  } `cmd help:"Remove files."`
//
//	  Ls struct {
//	    Paths []string `arg optional help:"Paths to list." type:"path"`
//	  } `cmd help:"List paths."`
//	}
//
//	func main() {
//	  kong.Parse(&CLI)
//	}
//
// See https://github.com/alecthomas/kong for details.
//
// # Jukebox's copy
//
// This is github.com/alecthomas/kong v1.17.0 (MIT, COPYING), its tests
// left out, with two changes for the size of the binary and one for its
// users:
//
//   - The hooks (BeforeReset, BeforeResolve, BeforeApply, AfterApply,
//     AfterRun) and Run are looked up by constant names (methodByName in
//     callbacks.go). Upstream passes the name through a variable; a
//     reflect MethodByName the linker cannot see the name of makes it keep
//     every exported method of every type that reaches an interface, in the
//     whole program: 12 MB of jukebox's binary (every S3 operation of the
//     AWS SDK among them).
//   - Run no longer binds Provide* methods (found by prefix, which needs
//     reflect's Method(i) and so the same). Jukebox binds with kong.Bind.
//   - An argument that names no command, and is close to none, is
//     answered with the commands there are ("jukebox booth takes one of:
//     status, diff, ..."), not with "unexpected argument X" alone.
//
// internal/deptest's TestNoReflectMethod fails when anything in the
// default build makes the linker keep every method again.
package kong
