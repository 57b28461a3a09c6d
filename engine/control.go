package engine

import (
	"encoding/json"
	"net/http"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// controlHandler serves JUKEBOX_CONTROL, the API agents and SDKs use to
// talk to jukebox from inside a run:
//
//	GET  /_jukebox/info    {"calls", "recording"}
//	POST /_jukebox/marker  {"label", "note"}          writes a marker frame
//	POST /_jukebox/turn    {"agent", "turn", "role", "text"} writes an agent.turn frame
//
// Transactions (BEGIN, COMMIT, ROLLBACK) join this API with the booth.
func controlHandler(p *proxy) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_jukebox/info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"calls": p.calls.Load(), "recording": p.tape != nil})
	})
	mux.HandleFunc("POST /_jukebox/marker", controlFrame[tapefmt.Marker](p))
	mux.HandleFunc("POST /_jukebox/turn", controlFrame[tapefmt.AgentTurn](p))
	return mux
}

// controlFrame decodes a payload of type T from the body and appends it.
func controlFrame[T tapefmt.Payload](p *proxy) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var v T
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			apiError(w, http.StatusBadRequest, "jukebox: "+err.Error())
			return
		}
		if t, ok := any(v).(tapefmt.AgentTurn); ok && t.Agent != "" {
			p.agent.Store(&t.Agent) // the agent of the calls that follow without a header
		}
		var seq uint64
		if p.tape != nil {
			var err error
			if seq, err = p.tape.Append(0, v); err != nil {
				apiError(w, http.StatusInternalServerError, "jukebox: "+err.Error())
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]uint64{"frame": seq})
	}
}
