// Command typecheck type-checks Go packages, their tests and every
// package they import, from source, for the GOOS and GOARCH of its
// environment, and prints each error as file:line:col: message. It exits
// 1 when there is any.
//
//	GOOS=darwin GOARCH=arm64 typecheck [-C dir] [-tags list] ./...
//
// .ci/cross.sh runs it for the systems docs/platforms.md names: it finds
// what go build would refuse there (a Linux-only call, a file's build
// constraint, a missing method) without compiling anything, so a cold
// build cache costs seconds instead of compiling the standard library
// and every dependency once more per system. What only a compiler or a
// linker sees (a function declared without a body and no assembly for
// it, a linkname) is outside its reach.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("C", ".", "the module's `folder`")
	tags := flag.String("tags", "", "comma-separated build `tags`, as go build -tags")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: [GOOS=os GOARCH=arch] typecheck [-C dir] [-tags list] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	cfg := &packages.Config{
		// From source all the way down: export data would mean compiling.
		Mode:  packages.LoadAllSyntax,
		Dir:   *dir,
		Tests: true,
	}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags", *tags}
	}
	pkgs, err := packages.Load(cfg, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(1)
	}
	// A package and its test variant share files: each error once.
	seen, errs := 0, map[string]bool{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		seen++
		for _, e := range p.Errors {
			if !errs[e.Error()] {
				errs[e.Error()] = true
				fmt.Fprintln(os.Stderr, e)
			}
		}
	})
	if len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "typecheck: %d error(s)\n", len(errs))
		os.Exit(1)
	}
	fmt.Printf("typecheck: %d packages and test variants, %d with what they import, no error (%.1fs)\n",
		len(pkgs), seen, time.Since(start).Seconds())
}
