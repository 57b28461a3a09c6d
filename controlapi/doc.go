// Package controlapi is jukebox's second wire format: the control API an
// agent, an SDK or `jukebox mcp` uses to talk to the run that records it
// (docs/control-api.md). It holds one Go type per route's body and
// answer, with the JSON keys the wire has; Server, which serves the API
// over Run, the interface a run implements (engine's runner does); and
// Client, which calls it over HTTP and implements Run too, so a caller
// in the run's own process calls the run directly through the same
// interface.
//
// The values are plain structs, so an exchange can be recorded and read
// back as it went. A test holds docs/control-api.md, the server's routes
// and the Python SDK's paths to each other, as tapefmt's tests hold
// FORMAT.md to the codec.
//
// controlapi sits below engine: it imports the format and the packages
// whose values travel in it (tapefmt, mcp, breaker), never engine.
package controlapi

// Version is the control API's version: the v1 of its paths. A change
// that breaks a client takes a new version, served beside this one.
const Version = 1

// Prefix is the path the API is served under on the run's proxy; the
// agent's JUKEBOX_CONTROL is the proxy's URL with it.
const Prefix = "/_jukebox"

// Variables a run sets in its agent's environment for the API.
const (
	// BaseEnv carries the API's base URL (http://127.0.0.1:PORT/_jukebox).
	BaseEnv = "JUKEBOX_CONTROL"
	// TokenEnv carries the run's token, which every request must carry
	// (Authorization: Bearer TOKEN).
	TokenEnv = "JUKEBOX_CONTROL_TOKEN"
)

// MaxBody is the longest request body the server reads; a batch sent as
// BatchContentType may be MaxBatchBody long, and so may each of its
// operations' own requests.
const (
	MaxBody      = 16 << 20
	MaxBatchBody = 256 << 20
)

// MaxTapedBody is the longest request a binary batch's write may stand
// for: the write is taped as that request (its content a JSON string, or
// base64 for bytes), in one blob of the tape, which holds at most
// tapefmt.MaxBlobSize. Content of control characters takes six bytes
// each there: such a write may not fit though the batch did, and is
// refused when its turn comes (413; the operations before it are served,
// none after) rather than staged and left off the tape.
const MaxTapedBody = 256 << 20
