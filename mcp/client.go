package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Call is a tool call to make: an outbox entry.
type Call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"arguments,omitempty"`
	Key  string          `json:"key"` // idempotency key, sent in _meta
}

// CallResult is how a Call went: the server's result, or an error.
type CallResult struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// RunCalls starts a stdio server (argv, in dir with env), initializes it
// as a client would, makes each call in order with its idempotency key in
// _meta ("io.jukebox/idempotency-key"), and ends it, recording every
// message. A call the server answers with an error is a CallResult with
// Error; a server that cannot start or answer fails the rest.
func RunCalls(ctx context.Context, argv, env []string, dir string, calls []Call, rec Recorder) ([]CallResult, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	defer func() {
		in.Close()
		t := time.AfterFunc(5*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		t.Stop()
	}()
	r := bufio.NewReaderSize(out, 64<<10)
	send := func(line []byte) error {
		rec(Message{Dir: tapefmt.MCPToServer, Raw: line, Size: len(line)})
		_, err := in.Write(append(line, '\n'))
		return err
	}
	await := func(id int) (envelopeResult, error) {
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				raw := trimLine(line)
				m := classify(raw, len(raw), DefaultMaxMessage)
				m.Dir = tapefmt.MCPFromServer
				rec(m)
				var res envelopeResult
				if json.Unmarshal(raw, &res) == nil && string(res.ID) == fmt.Sprint(id) {
					return res, nil
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = errors.New("the server exited")
				}
				return envelopeResult{}, fmt.Errorf("waiting for the answer to %d: %w", id, err)
			}
		}
	}
	return converse(send, await, calls)
}

// converse is a client's side of a session with a server, whatever the
// transport: initialize, say so, make each call in order with its
// idempotency key, return how each went.
func converse(send func([]byte) error, await func(int) (envelopeResult, error), calls []Call) ([]CallResult, error) {
	if err := send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"jukebox-outbox","version":"1"}}}`)); err != nil {
		return nil, err
	}
	if res, err := await(0); err != nil {
		return nil, err
	} else if res.Error != nil {
		return nil, fmt.Errorf("initialize: %s", res.Error.Message)
	}
	if err := send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, err
	}
	results := make([]CallResult, len(calls))
	for i, c := range calls {
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": c.Tool, "arguments": args, "_meta": map[string]string{"io.jukebox/idempotency-key": c.Key}}})
		if err := send(req); err != nil {
			return results, err
		}
		res, err := await(i + 1)
		if err != nil {
			return results, err
		}
		switch {
		case res.Error != nil:
			results[i].Error = res.Error.Message
		default:
			results[i].Result = res.Result
		}
	}
	return results, nil
}

// protocolVersion is the MCP revision the outbox's client speaks.
const protocolVersion = "2025-06-18"

type envelopeResult struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func trimLine(line []byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	return line
}
