package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// RunCallsHTTP is RunCalls for a server that speaks the streamable HTTP
// transport at endpoint: a session of its own (initialize, the session id
// it is given on every later request, DELETE at the end), each call in
// order with its idempotency key, every message recorded. An answer may
// come as JSON or as a server-sent event stream.
func RunCallsHTTP(ctx context.Context, endpoint string, calls []Call, rec Recorder) ([]CallResult, error) {
	h := &httpSession{ctx: ctx, endpoint: endpoint, rec: rec, answers: map[string]envelopeResult{}}
	defer h.end()
	return converse(h.send, h.await, calls)
}

// httpSession is a client's session over the streamable HTTP transport.
type httpSession struct {
	ctx      context.Context
	endpoint string
	rec      Recorder
	id       string // Mcp-Session-Id, once the server gave one
	answers  map[string]envelopeResult
}

func (h *httpSession) send(line []byte) error {
	h.rec(Message{Dir: tapefmt.MCPToServer, Raw: line, Size: len(line)})
	req, err := http.NewRequestWithContext(h.ctx, http.MethodPost, h.endpoint, bytes.NewReader(line))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.id != "" {
		req.Header.Set("Mcp-Session-Id", h.id)
		req.Header.Set("MCP-Protocol-Version", protocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		h.id = id
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, DefaultMaxMessage+1))
	if err != nil {
		return err
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s: %s: %s", h.endpoint, resp.Status, strings.TrimSpace(string(body)))
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, DefaultMaxMessage+1)
		var data []byte
		for sc.Scan() {
			l := bytes.TrimRight(sc.Bytes(), "\r")
			switch {
			case len(l) == 0 && len(data) > 0:
				h.take(data)
				data = nil
			case bytes.HasPrefix(l, []byte("data:")):
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" "))...)
			}
		}
		if len(data) > 0 {
			h.take(data)
		}
	default:
		h.take(body)
	}
	return nil
}

// take records a message from the server and keeps it if it answers.
func (h *httpSession) take(raw []byte) {
	raw = bytes.TrimSpace(raw)
	m := classify(raw, len(raw), DefaultMaxMessage)
	m.Dir = tapefmt.MCPFromServer
	h.rec(m)
	var res envelopeResult
	if json.Unmarshal(raw, &res) == nil && len(res.ID) > 0 {
		h.answers[string(res.ID)] = res
	}
}

func (h *httpSession) await(id int) (envelopeResult, error) {
	res, ok := h.answers[strconv.Itoa(id)]
	if !ok {
		return res, fmt.Errorf("%s: no answer to request %d", h.endpoint, id)
	}
	delete(h.answers, strconv.Itoa(id))
	return res, nil
}

// end closes the session on the server, when it gave one.
func (h *httpSession) end() {
	if h.id == "" {
		return
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(h.ctx), http.MethodDelete, h.endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", h.id)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
