package controlapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/jukebox-os/jukebox/mcp"
)

// Client calls a run's control API over HTTP. It implements Run: each
// method is one request, and an answer that is not 200 comes back as an
// *Error.
type Client struct {
	// Base is the API's base URL, the agent's JUKEBOX_CONTROL.
	Base string
	// Token is the run's token, the agent's JUKEBOX_CONTROL_TOKEN.
	Token string
	// HTTP is the client requests go through; nil is one that calls the
	// loopback port directly, never through a proxy the environment names.
	HTTP *http.Client
}

var _ Run = (*Client)(nil)

// loopback calls the API directly, never through a proxy.
var loopback = &http.Client{Transport: &http.Transport{Proxy: nil}}

// FromEnv is the API of the run this process is part of (BaseEnv and
// TokenEnv), or nil when it runs on its own.
func FromEnv() (*Client, error) {
	base := os.Getenv(BaseEnv)
	if base == "" {
		return nil, nil
	}
	token := os.Getenv(TokenEnv)
	if token == "" {
		return nil, fmt.Errorf("%s is set but %s is not: the recorder's token did not reach this process", BaseEnv, TokenEnv)
	}
	return &Client{Base: base, Token: token}, nil
}

// call makes one request: body (nil: none) to method path (under /v1/),
// the answer decoded into out.
func call[Ans any](ctx context.Context, c *Client, method, path string, body any) (Ans, error) {
	var out Ans
	var rd io.Reader
	contentType := "application/json"
	if e, ok := body.(encoded); ok {
		rd, contentType = bytes.NewReader(e.data), e.contentType
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return out, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+"/v1/"+path, rd)
	if err != nil {
		return out, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	hc := c.HTTP
	if hc == nil {
		hc = loopback
	}
	resp, err := hc.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return out, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, answerError(resp.StatusCode, raw)
	}
	return out, json.Unmarshal(raw, &out)
}

// encoded is a request body encoded already, with its content type.
type encoded struct {
	data        []byte
	contentType string
}

// answerError is the *Error an answer of status carries; a refused call
// has mcp.ErrNotHeld as its cause, as in the run's process.
func answerError(status int, raw []byte) error {
	var e errorBody
	if json.Unmarshal(raw, &e) != nil || e.Error == nil || e.Error.Message == "" {
		return fmt.Errorf("control API: HTTP %d", status)
	}
	e.Error.Status = status
	if e.Error.Type == TypeRefused {
		e.Error.Err = mcp.ErrNotHeld
	}
	return e.Error
}

// Info calls GET /v1/info.
func (c *Client) Info(ctx context.Context) (Info, error) {
	return call[Info](ctx, c, "GET", "info", nil)
}

// Marker calls POST /v1/marker.
func (c *Client) Marker(ctx context.Context, m Marker) (Frame, error) {
	return call[Frame](ctx, c, "POST", "marker", m)
}

// Turn calls POST /v1/turn.
func (c *Client) Turn(ctx context.Context, t Turn) (TurnAnswer, error) {
	return call[TurnAnswer](ctx, c, "POST", "turn", t)
}

// Breaker calls GET /v1/breaker.
func (c *Client) Breaker(ctx context.Context) (BreakerState, error) {
	return call[BreakerState](ctx, c, "GET", "breaker", nil)
}

// End calls POST /v1/end.
func (c *Client) End(ctx context.Context, e End) (Ended, error) {
	return call[Ended](ctx, c, "POST", "end", e)
}

// Endpoint calls POST /v1/endpoint.
func (c *Client) Endpoint(ctx context.Context, e Endpoint) (Endpoint, error) {
	return call[Endpoint](ctx, c, "POST", "endpoint", e)
}

// MCPStart calls POST /v1/mcp/start.
func (c *Client) MCPStart(ctx context.Context, s MCPStart) (MCPSession, error) {
	return call[MCPSession](ctx, c, "POST", "mcp/start", s)
}

// MCPMessage calls POST /v1/mcp/message.
func (c *Client) MCPMessage(ctx context.Context, m MCPMessage) (Frame, error) {
	return call[Frame](ctx, c, "POST", "mcp/message", m)
}

// MCPOutbox calls POST /v1/mcp/outbox.
func (c *Client) MCPOutbox(ctx context.Context, o MCPOutbox) (OutboxKey, error) {
	return call[OutboxKey](ctx, c, "POST", "mcp/outbox", o)
}

// MCPLive calls GET /v1/mcp/live.
func (c *Client) MCPLive(ctx context.Context) (Live, error) {
	return call[Live](ctx, c, "GET", "mcp/live", nil)
}

// Begin calls POST /v1/tx.
func (c *Client) Begin(ctx context.Context, b Begin) (Begun, error) {
	return call[Begun](ctx, c, "POST", "tx", b)
}

// Tx is transaction id, whose operations are requests; an id that is not
// open is found out by the first of them.
func (c *Client) Tx(_ context.Context, id string) (Tx, error) { return clientTx{c, id}, nil }
