package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table returns a tabwriter for aligned columns; call Flush when done.
func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// readKeyFile reads a seal key: the file's bytes, surrounding whitespace trimmed.
func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	key := []byte(strings.TrimSpace(string(b)))
	if len(key) < tapefmt.MinKeySize || len(key) > tapefmt.MaxKeySize {
		return nil, fmt.Errorf("key file %s holds %d bytes; a seal key is %d to %d bytes", path, len(key), tapefmt.MinKeySize, tapefmt.MaxKeySize)
	}
	return key, nil
}
