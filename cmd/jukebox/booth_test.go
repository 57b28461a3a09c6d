package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/kong"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
)

// boothCLI mirrors how main mounts the booth and doctor commands.
type boothCLI struct {
	Booth  BoothCmd  `cmd:"" help:"Inspect, commit or roll back a Shadow Booth transaction."`
	Doctor DoctorCmd `cmd:"" help:"Print what this machine supports for the Shadow Booth."`
}

func runBoothCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("")}
	var cli boothCLI
	p, err := kong.New(&cli, kong.Bind(env), withContext(t.Context()), kong.Writers(&out, &errb), kong.Exit(func(int) { t.Fatal("exit") }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := p.Parse(args)
	if err != nil {
		return "", "", err
	}
	err = ctx.Run()
	return out.String(), errb.String(), err
}

func TestBoothCommands(t *testing.T) {
	t.Parallel()
	requireBooth(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx.Files().WriteFile("b.txt", []byte("b"), 0o644)
	tx.Files().Remove("a.txt")
	tx.Release() // as a run that ended with it kept
	out, _, err := runBoothCLI(t, "booth", "diff", "-C", ws)
	if err != nil || out != tx.ID()+": 1 write, 1 delete\n  delete a.txt\n  write b.txt (1 bytes, -rw-r--r--)\n" {
		t.Fatalf("diff: %q %v", out, err)
	}
	wasm := filepath.Join("..", "..", "sandbox", "testdata", "wasmtool.wasm")
	if _, _, err := runBoothCLI(t, "booth", "exec", "-C", ws, wasm, "write", "c.txt", "from wasm"); err != nil {
		t.Fatalf("exec: %v", err)
	}
	out, _, err = runBoothCLI(t, "booth", "status", "-C", ws, "--json")
	if err != nil || !strings.Contains(out, tx.ID()) || !strings.Contains(out, `"write": 2`) {
		t.Fatalf("status: %q %v", out, err)
	}
	out, _, err = runBoothCLI(t, "booth", "commit", "-C", ws)
	if err != nil || !strings.HasPrefix(out, "committed "+tx.ID()+": 3 changes\n") {
		t.Fatalf("commit: %q %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "c.txt")); string(b) != "from wasm" {
		t.Fatalf("c.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("a.txt survived")
	}
	if _, _, err := runBoothCLI(t, "booth", "rollback", "-C", ws); err == nil {
		t.Fatal("rollback with no open transaction succeeded")
	}
}

func TestDoctor(t *testing.T) {
	probeBooth = func(context.Context, string) sandbox.Capabilities {
		return sandbox.Capabilities{UserNamespaces: true, Overlay: true, Wazero: "v1.12.0", ExecMode: sandbox.ModeOverlay,
			Notes: []string{"reflink: no"}}
	}
	defer func() { probeBooth = sandbox.Probe }()
	out, _, err := runBoothCLI(t, "doctor")
	if err != nil || !strings.Contains(out, "overlayfs        yes") || !strings.Contains(out, "reflink          no") {
		t.Fatalf("doctor: %q %v", out, err)
	}
	out, _, err = runBoothCLI(t, "doctor", "--json")
	if err != nil || !strings.Contains(out, `"exec_mode": "overlay"`) {
		t.Fatalf("doctor --json: %q %v", out, err)
	}
}

// requireBooth stops a test that needs the booth where the platform has
// none (TestBoothUnsupported covers those).
func requireBooth(t *testing.T) {
	t.Helper()
	if err := sandbox.Supported(); err != nil {
		testenv.Unavailable(t, fmt.Sprintf("the booth (%v)", err), "run on Linux or macOS")
	}
}
