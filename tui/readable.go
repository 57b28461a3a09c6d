package tui

import (
	"bytes"
	"encoding/json"
	"strings"
)

// readableJSON lays JSON out for reading: two-space indents, keys in the
// order written, and a string that holds line breaks as its lines,
// indented under its key (a tool's file content reads as the file). It
// is for reading, not JSON any more; text that is not JSON comes back as
// it is.
func readableJSON(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var b strings.Builder
	if err := writeValue(&b, dec, 0); err != nil {
		return s
	}
	if _, err := dec.Token(); err == nil || !json.Valid([]byte(s)) {
		return s // more than one value, or not JSON after all
	}
	return b.String()
}

func writeValue(b *strings.Builder, dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	pad := strings.Repeat("  ", depth+1)
	switch t := tok.(type) {
	case json.Delim:
		closing := map[json.Delim]string{'{': "}", '[': "]"}[t]
		if !dec.More() {
			dec.Token()
			b.WriteString(string(t) + closing)
			return nil
		}
		b.WriteString(string(t) + "\n")
		for first := true; dec.More(); first = false {
			if !first {
				b.WriteString(",\n")
			}
			b.WriteString(pad)
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteString(": ")
			}
			if err := writeValue(b, dec, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString("\n" + strings.Repeat("  ", depth) + closing)
	case string:
		if strings.Contains(strings.TrimRight(t, "\n"), "\n") {
			for _, l := range strings.Split(strings.TrimRight(t, "\n"), "\n") {
				b.WriteString("\n" + pad + "  " + l)
			}
			return nil
		}
		var q bytes.Buffer
		enc := json.NewEncoder(&q)
		enc.SetEscapeHTML(false)
		enc.Encode(t)
		b.WriteString(strings.TrimSuffix(q.String(), "\n"))
	case nil:
		b.WriteString("null")
	default:
		kb, _ := json.Marshal(t)
		b.Write(kb)
	}
	return nil
}
