package tapefmt

import (
	"fmt"
	"strings"
)

// Kind says what a frame records. The numbers are part of the format: never
// renumber a kind, only add new ones.
type Kind uint8

// Frame kinds. The comment gives the dotted name used in JSON and on the CLI.
const (
	KindRunStart     Kind = 1  // run.start
	KindRunEnd       Kind = 2  // run.end
	KindStep         Kind = 3  // step.commit: the end of one whole agent step
	KindLLMRequest   Kind = 4  // llm.request
	KindLLMResponse  Kind = 5  // llm.response
	KindToolCall     Kind = 6  // tool.call
	KindToolResult   Kind = 7  // tool.result
	KindMCP          Kind = 8  // mcp.message
	KindFileChange   Kind = 9  // file.change
	KindOutput       Kind = 10 // proc.output
	KindClock        Kind = 11 // clock
	KindSeed         Kind = 12 // seed
	KindTxBegin      Kind = 13 // tx.begin
	KindTxCommit     Kind = 14 // tx.commit
	KindTxRollback   Kind = 15 // tx.rollback
	KindBreakerTrip  Kind = 16 // breaker.trip
	KindAgentTurn    Kind = 17 // agent.turn
	KindMarker       Kind = 18 // marker
	KindNetRefused   Kind = 19 // net.refused
	KindHTTPRequest  Kind = 20 // http.request
	KindHTTPResponse Kind = 21 // http.response
	KindNetConn      Kind = 22 // net.conn
	KindControl      Kind = 23 // control
	KindSnapshot     Kind = 24 // ws.snapshot: the workspace at the run's start
)

var kindNames = [...]string{
	KindRunStart:     "run.start",
	KindRunEnd:       "run.end",
	KindStep:         "step.commit",
	KindLLMRequest:   "llm.request",
	KindLLMResponse:  "llm.response",
	KindToolCall:     "tool.call",
	KindToolResult:   "tool.result",
	KindMCP:          "mcp.message",
	KindFileChange:   "file.change",
	KindOutput:       "proc.output",
	KindClock:        "clock",
	KindSeed:         "seed",
	KindTxBegin:      "tx.begin",
	KindTxCommit:     "tx.commit",
	KindTxRollback:   "tx.rollback",
	KindBreakerTrip:  "breaker.trip",
	KindAgentTurn:    "agent.turn",
	KindMarker:       "marker",
	KindNetRefused:   "net.refused",
	KindHTTPRequest:  "http.request",
	KindHTTPResponse: "http.response",
	KindNetConn:      "net.conn",
	KindControl:      "control",
	KindSnapshot:     "ws.snapshot",
}

// String returns the dotted name of k, or "kind.N" for a kind this version
// does not know.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind.%d", uint8(k))
}

// Known reports whether this version of the format defines k.
func (k Kind) Known() bool {
	return int(k) < len(kindNames) && kindNames[k] != ""
}

// Boundary reports whether a frame of kind k closes a whole step, so that a
// torn tape can be cut back to it.
func (k Kind) Boundary() bool {
	return k == KindStep || k == KindRunStart || k == KindRunEnd
}

// MarshalText writes the dotted name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a dotted name.
func (k *Kind) UnmarshalText(b []byte) error {
	p, err := ParseKind(string(b))
	*k = p
	return err
}

// ParseKind turns an exact dotted name such as "llm.request" into a Kind.
func ParseKind(name string) (Kind, error) {
	for k, n := range kindNames {
		if n != "" && n == name {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown frame kind %q (known: %s)", name, strings.Join(KindNames(), ", "))
}

// KindNames lists the dotted names of every known kind, in number order.
func KindNames() []string {
	var names []string
	for _, n := range kindNames {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}
