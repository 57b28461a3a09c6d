package llmwire

import (
	"encoding/json"
)

// ParseRequestInfo reads a request body, decoded; a body that is not JSON
// gives the zero RequestInfo. It reads as json.Unmarshal into RequestInfo
// would (keys matched ignoring case, the last one winning, nothing at all
// from a body that is not valid JSON), in one pass that skips every other
// value without decoding it: the body of a long conversation is tens of
// KB, read on every call the recorder sees. What it does not read so (a
// key or model with escapes or non-ASCII bytes, a value of another type)
// goes to json.Unmarshal.
func ParseRequestInfo(body []byte) RequestInfo {
	if ri, ok := scanRequestInfo(body); ok {
		return ri
	}
	var ri RequestInfo
	_ = json.Unmarshal(body, &ri) // a body that is not JSON has no model
	return ri
}

// scanRequestInfo is ParseRequestInfo's one pass; ok is false where
// json.Unmarshal must decide.
func scanRequestInfo(b []byte) (ri RequestInfo, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ri, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ri, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ri, false
		}
		end, plain := scanString(b, i)
		if end < 0 || !plain {
			return ri, false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return ri, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return ri, false
		}
		switch {
		case foldEqual(key, "model"):
			switch {
			case b[i] == '"':
				end, plain := scanString(b, i)
				if end < 0 || !plain {
					return ri, false
				}
				ri.Model = string(b[i+1 : end-1])
				i = end
			case hasLiteral(b, i, "null"):
				i += 4
			default:
				return ri, false
			}
		case foldEqual(key, "stream"):
			switch {
			case hasLiteral(b, i, "true"):
				ri.Stream, i = true, i+4
			case hasLiteral(b, i, "false"):
				ri.Stream, i = false, i+5
			case hasLiteral(b, i, "null"):
				i += 4
			default:
				return ri, false
			}
		default:
			if i = skipValue(b, i); i < 0 {
				return ri, false
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return ri, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return ri, skipSpace(b, i+1) == len(b)
		default:
			return ri, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// foldEqual reports whether key is name (lower case ASCII) ignoring ASCII
// case, as encoding/json matches a field (a key with non-ASCII bytes
// never gets here: K and S have Unicode letters that fold to them).
func foldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if c|0x20 != name[i] {
			return false
		}
	}
	return true
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanString reads the JSON string at b[i] (a quote): the index after it,
// or -1 where it is not a valid one; plain when it holds neither an
// escape nor a byte outside ASCII.
func scanString(b []byte, i int) (end int, plain bool) {
	plain = true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++
			if j >= len(b) {
				return -1, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-j < 5 || !isHex(b[j+1]) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) {
					return -1, false
				}
				j += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		case c >= 0x80:
			plain = false
		}
	}
	return -1, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// skipValue is the index after the valid JSON value at b[i], or -1.
func skipValue(b []byte, i int) int {
	// open holds the containers the value is inside: '{' or '['.
	var open []byte
	for {
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			open = append(open, c)
			i = skipSpace(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(b, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			if i, _ = scanString(b, i); i < 0 {
				return -1
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return -1
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return -1
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return -1
			}
			i += 4
		default:
			if i = scanNumber(b, i); i < 0 {
				return -1
			}
		}
		// A value ended: close what it ends, or go on to the next one.
		for {
			if len(open) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			top := open[len(open)-1]
			switch {
			case b[i] == ',':
				i = skipSpace(b, i+1)
				if top == '{' {
					if i = objectKey(b, i); i < 0 {
						return -1
					}
				}
			case top == '{' && b[i] == '}' || top == '[' && b[i] == ']':
				open = open[:len(open)-1]
				i++
				continue
			default:
				return -1
			}
			break
		}
	}
}

// objectKey reads `"key" :` at b[i] and returns where the value starts.
func objectKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i, _ = scanString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// scanNumber is the index after the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	digits := func(j int) int {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}
