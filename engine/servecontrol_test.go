package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestServeControlInProcess: a served run gives its control API to the
// caller in its own process (jukebox mcp on a tape of its own), which
// calls it directly: the session's frames and the end reach the tape as
// over HTTP.
func TestServeControlInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.jbx")
	ctx := context.Background()
	ready := make(chan engine.ServeInfo, 1)
	done := make(chan error, 1)
	go func() {
		_, err := engine.Serve(ctx, engine.ServeOptions{RunOptions: engine.RunOptions{Argv: []string{"srv"}, Dir: t.TempDir()},
			Tape: path, Ready: func(i engine.ServeInfo) { ready <- i }})
		done <- err
	}()
	var ctl controlapi.Run
	select {
	case info := <-ready:
		ctl = info.Control
	case err := <-done:
		t.Fatalf("Serve ended before it served: %v", err)
	}
	if ctl == nil {
		t.Fatal("ServeInfo.Control is nil")
	}
	s, err := ctl.MCPStart(ctx, controlapi.MCPStart{Server: "srv", Argv: []string{"srv"}})
	if err != nil || s.Session != 1 || s.Replay {
		t.Fatalf("mcp start: %+v %v", s, err)
	}
	msg := controlapi.MCPMessage{Server: "srv", Session: 1, Dir: tapefmt.MCPToServer, Message: `{"jsonrpc":"2.0","id":1,"method":"ping"}`}
	if f, err := ctl.MCPMessage(ctx, msg); err != nil || f.Frame == 0 {
		t.Fatalf("mcp message: %+v %v", f, err)
	}
	if _, err := ctl.MCPMessage(ctx, controlapi.MCPMessage{Dir: "sideways"}); err == nil {
		t.Error("a message with no direction was taken")
	}
	if e, err := ctl.End(ctx, controlapi.End{ExitCode: 3}); err != nil || !e.Ended {
		t.Fatalf("end: %+v %v", e, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	n := 0
	for _, err := range tp.Frames(tapefmt.KindMCP) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d mcp.message frames, want the start and the message", n)
	}
}
