package engine

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// ControlAPIVersion is the version of the control API: the v1 of its
// paths. docs/control-api.md documents it; a change that breaks a client
// takes a new version, served beside this one.
const ControlAPIVersion = 1

// TokenEnv names the variable that carries the control API's token to
// the agent, beside JUKEBOX_CONTROL.
const TokenEnv = "JUKEBOX_CONTROL_TOKEN"

// control serves JUKEBOX_CONTROL, the API agents and SDKs use to talk to
// jukebox from inside a run (docs/control-api.md):
//
//	GET  /_jukebox/v1/info                       the run: mode, tape, calls
//	POST /_jukebox/v1/marker  {"label", "note"}  writes a marker frame
//	POST /_jukebox/v1/turn    {"agent", "turn", "role", "text", "model", "cost_usd"}
//	GET  /_jukebox/v1/breaker                    the circuit breaker's trip, if any
//	POST /_jukebox/v1/tx      {"name"}           begins a transaction (sdktx.go)
//	POST /_jukebox/v1/tx/{id}/{op}               write, delete, stage-path, sql, shell, commit, rollback
//	POST /_jukebox/v1/end     {"exit_code"}      ends a run that jukebox serve records
//	POST /_jukebox/v1/mcp/start, /mcp/message    MCP sessions of jukebox mcp (mcpcontrol.go)
//
// /_jukebox/info, /marker and /turn are the same as their v1 paths.
// Every request must carry the run's token (Authorization: Bearer TOKEN):
// the port is open to every process of the machine, the token is in the
// agent's environment alone.
type control struct {
	p     *proxy
	token string
	mode  tapefmt.RunMode
	txs   *sdkTxs
	mcp   mcpSessions
	mux   *http.ServeMux
	// onEnd ends a served run (Serve); nil for a run with an agent.
	onEnd func(tapefmt.RunEnd)
}

func newControl(p *proxy) *control {
	var b [16]byte
	rand.Read(b[:])
	c := &control{p: p, token: hex.EncodeToString(b[:]), mux: http.NewServeMux()}
	for _, prefix := range []string{"/_jukebox/v1", "/_jukebox"} {
		c.mux.HandleFunc("GET "+prefix+"/info", c.info)
		c.mux.HandleFunc("POST "+prefix+"/marker", c.marker)
		c.mux.HandleFunc("POST "+prefix+"/turn", c.turn)
	}
	c.mux.HandleFunc("GET /_jukebox/v1/breaker", c.breaker)
	c.mux.HandleFunc("POST /_jukebox/v1/tx", c.begin)
	c.mux.HandleFunc("POST /_jukebox/v1/tx/{id}/{op}", c.txOp)
	c.mux.HandleFunc("POST /_jukebox/v1/end", c.end)
	c.mux.HandleFunc("POST /_jukebox/v1/endpoint", c.endpoint)
	c.mux.HandleFunc("POST /_jukebox/v1/mcp/start", c.mcpStart)
	c.mux.HandleFunc("POST /_jukebox/v1/mcp/message", c.mcpMessage)
	c.mux.HandleFunc("GET /_jukebox/v1/mcp/live", c.mcpLive)
	c.mux.HandleFunc("POST /_jukebox/v1/mcp/outbox", c.mcpOutbox)
	return c
}

// ServeHTTP checks the token, then routes.
func (c *control) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(c.token)) != 1 {
		controlError(w, http.StatusUnauthorized, "unauthorized",
			"jukebox: the control API needs the run's token: Authorization: Bearer $"+TokenEnv)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// controlError answers with {"error": {"type", "message"}}.
func controlError(w http.ResponseWriter, status int, typ, msg string) {
	writeControl(w, status, map[string]any{"error": map[string]string{"type": typ, "message": msg}})
}

func writeControl(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body of at most 16 MiB into v, refusing unknown
// keys; false means it answered 400.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		controlError(w, http.StatusBadRequest, "bad_request", "jukebox: "+err.Error())
		return false
	}
	return true
}

// append writes a frame (when the run writes a tape) and returns its
// sequence number.
func (c *control) append(p tapefmt.Payload) (uint64, error) {
	if c.p.tape == nil {
		return 0, nil
	}
	return c.p.tape.Append(0, p)
}

func (c *control) info(w http.ResponseWriter, r *http.Request) {
	info := map[string]any{"api": ControlAPIVersion, "calls": c.p.calls.Load(), "recording": c.p.tape != nil,
		"mode": c.mode, "transactions": c.txs.available()}
	if c.p.tape != nil {
		id := c.p.tape.ID()
		info["tape_id"] = hex.EncodeToString(id[:])
	}
	writeControl(w, http.StatusOK, info)
}

func (c *control) marker(w http.ResponseWriter, r *http.Request) {
	var m tapefmt.Marker
	if !decode(w, r, &m) {
		return
	}
	seq, err := c.append(m)
	if err != nil {
		controlError(w, http.StatusInternalServerError, "tape", "jukebox: "+err.Error())
		return
	}
	writeControl(w, http.StatusOK, map[string]any{"frame": seq})
}

// turn writes an agent.turn frame; the circuit breaker counts its text
// and reported cost, and a trip comes back in the answer ("breaker") as
// well as on the tape.
func (c *control) turn(w http.ResponseWriter, r *http.Request) {
	var t tapefmt.AgentTurn
	if !decode(w, r, &t) {
		return
	}
	if t.CostUSD < 0 {
		controlError(w, http.StatusBadRequest, "bad_request", "jukebox: cost_usd is negative")
		return
	}
	if t.Agent != "" {
		c.p.agent.Store(&t.Agent) // the agent of the calls that follow without a header
	}
	seq, err := c.append(t)
	if err != nil {
		controlError(w, http.StatusInternalServerError, "tape", "jukebox: "+err.Error())
		return
	}
	out := map[string]any{"frame": seq}
	if g := c.p.guard; g != nil {
		if trip := g.turn(turnOf(seq, &t, time.Now()), c.p.lastAgent()); trip != nil {
			out["breaker"] = trip
		}
	}
	writeControl(w, http.StatusOK, out)
}

func (c *control) breaker(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"tripped": false}
	if g := c.p.guard; g != nil {
		if t := g.tripped(); t != nil {
			out["tripped"], out["breaker"] = true, t
		}
	}
	writeControl(w, http.StatusOK, out)
}
