package llmwire

import (
	"bytes"
	"encoding/json"
)

// Indent is b, JSON, indented for a diff to read key by key; as it is
// when it nests deeper than maxPrettyDepth (an indented document grows as
// its depth squared: a 21 KB request nested 9,990 deep made a replay's
// divergence report of 38 MB and took 1.4 GB) or is no JSON.
func Indent(b []byte) string {
	if jsonDepth(b) > maxPrettyDepth {
		return string(b)
	}
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// maxPrettyDepth is the deepest nesting pretty indents.
const maxPrettyDepth = 64

// jsonDepth is how deep the arrays and objects of b, JSON, nest.
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
