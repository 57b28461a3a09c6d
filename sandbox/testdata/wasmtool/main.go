// Command wasmtool is a tiny WASI preview 1 tool for the sandbox tests:
//
//	wasmtool cat FILE | write FILE TEXT | rm FILE | ls DIR | mkdir DIR | mv A B
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "wasmtool:", err)
		os.Exit(1)
	}
}

func run(a []string) error {
	if len(a) < 2 {
		return fmt.Errorf("usage: wasmtool cmd args")
	}
	switch a[0] {
	case "cat":
		b, err := os.ReadFile(a[1])
		os.Stdout.Write(b)
		return err
	case "write":
		return os.WriteFile(a[1], []byte(a[2]), 0o644)
	case "rm":
		return os.RemoveAll(a[1])
	case "mkdir":
		return os.Mkdir(a[1], 0o755)
	case "mv":
		return os.Rename(a[1], a[2])
	case "ls":
		ents, err := os.ReadDir(a[1])
		for _, e := range ents {
			fmt.Println(e.Name())
		}
		return err
	}
	return fmt.Errorf("unknown command %q", a[0])
}
