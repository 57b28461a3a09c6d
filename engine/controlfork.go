package engine

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/jukebox-os/jukebox/controlapi"
)

// A fork's fork point can fall inside a transaction: begun (and staged
// into) before it, answered from the parent, and used after it, live.
// The first live request of such a transaction begins a real one and
// stages again what the parent's answered for it, then goes on under
// the real transaction's id (the agent keeps the recorded one).

// txOf is the transaction id of a path /v1/tx/ID/OP, and its operation.
func txOf(path string) (id, op string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1/tx/")
	if !ok {
		return "", "", false
	}
	id, op, ok = strings.Cut(rest, "/")
	return id, op, ok
}

// note keeps an exchange answered from the tape that a transaction may
// need staged again once it goes live (under ct.mu).
func (ct *ctlTape) note(r *ctlRecorded) {
	if r.status != http.StatusOK {
		return
	}
	if ct.open == nil {
		ct.open = map[string][]*ctlRecorded{}
	}
	if r.path == "/v1/tx" {
		var b controlapi.Begun
		if json.Unmarshal(r.ans, &b) == nil && b.Tx != "" {
			ct.open[b.Tx] = []*ctlRecorded{r}
		}
		return
	}
	id, op, ok := txOf(r.path)
	switch {
	case !ok || ct.open[id] == nil:
	case op == "commit" || op == "rollback":
		delete(ct.open, id)
	default:
		ct.open[id] = append(ct.open[id], r)
	}
}

// live is path as a live request goes: a transaction the tape answered
// until now is begun for real first (goLive), and its recorded id
// stands for the real one.
func (c *control) livePath(r *http.Request, path string) (string, error) {
	id, _, ok := txOf(path)
	if !ok {
		return path, nil
	}
	c.ctl.mu.Lock()
	served := c.ctl.open[id]
	delete(c.ctl.open, id)
	real, aliased := c.ctl.alias[id]
	c.ctl.mu.Unlock()
	if served != nil {
		var err error
		if real, err = c.goLive(r, served); err != nil {
			return path, err
		}
		c.ctl.mu.Lock()
		if c.ctl.alias == nil {
			c.ctl.alias = map[string]string{}
		}
		c.ctl.alias[id] = real
		c.ctl.mu.Unlock()
	} else if !aliased {
		return path, nil
	}
	return strings.Replace(path, id, real, 1), nil
}

// goLive begins a real transaction for one the tape answered so far and
// stages in it again what the tape answered for it: its real id.
func (c *control) goLive(r *http.Request, served []*ctlRecorded) (string, error) {
	var b controlapi.Begin
	if len(served[0].req) > 0 {
		if err := json.Unmarshal(served[0].req, &b); err != nil {
			return "", err
		}
	}
	begun, err := c.Begin(r.Context(), b)
	if err != nil {
		return "", err
	}
	var recorded controlapi.Begun
	json.Unmarshal(served[0].ans, &recorded)
	for _, op := range served[1:] {
		path := strings.Replace(op.path, recorded.Tx, begun.Tx, 1)
		again, err := http.NewRequestWithContext(r.Context(), op.method, controlapi.Prefix+path, bytes.NewReader(op.req))
		if err != nil {
			return "", err
		}
		again.Header.Set("Authorization", r.Header.Get("Authorization"))
		again.ContentLength = int64(len(op.req))
		c.api.ServeHTTP(&discard{}, again)
	}
	return begun.Tx, nil
}
