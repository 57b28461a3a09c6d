package reqmatch

import (
	"bytes"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// FirstDiff names the first field where two canonical forms differ, as a
// path in the Ignore syntax ("messages.3.content"); "" when both are
// equal or neither is structured, and "(body)" when the difference is the
// whole value (one side is not JSON, or the top-level types differ). Keys
// are walked in sorted order, array positions in order.
func FirstDiff(recorded, live []byte) string {
	if bytes.Equal(recorded, live) {
		return "" // the usual replay: the same bytes, not decoded twice
	}
	a, errA := decodeJSON(recorded)
	b, errB := decodeJSON(live)
	if errA != nil || errB != nil {
		if string(recorded) == string(live) {
			return ""
		}
		return "(body)"
	}
	p, differ := firstDiff(a, b, nil)
	if !differ {
		return ""
	}
	if len(p) == 0 {
		return "(body)"
	}
	return strings.Join(p, ".")
}

func firstDiff(a, b any, path []string) ([]string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, true
		}
		for _, k := range unionKeys(x, y) {
			va, inA := x[k]
			vb, inB := y[k]
			if inA != inB {
				return append(path, escapeKey(k)), true
			}
			if p, d := firstDiff(va, vb, append(path, escapeKey(k))); d {
				return p, true
			}
		}
		return nil, false
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, true
		}
		for i := 0; i < len(x) || i < len(y); i++ {
			if i >= len(x) || i >= len(y) {
				return append(path, strconv.Itoa(i)), true
			}
			if p, d := firstDiff(x[i], y[i], append(path, strconv.Itoa(i))); d {
				return p, true
			}
		}
		return nil, false
	default:
		if !reflect.DeepEqual(a, b) {
			return path, true
		}
		return nil, false
	}
}

// escapeKey writes a key as a path segment.
func escapeKey(k string) string {
	return strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(k)
}

// unionKeys is the keys of a and b, each once, sorted.
func unionKeys[A, B any](a map[string]A, b map[string]B) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
