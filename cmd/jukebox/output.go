package main

import (
	"bufio"
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
// What it writes is buffered: a tabwriter writes each cell and its
// padding apart, a system call each on a terminal or a pipe (ls of
// 100,000 tapes made millions).
func table(w io.Writer) *tableWriter {
	buf := bufio.NewWriterSize(w, 64<<10)
	return &tableWriter{Writer: tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0), buf: buf}
}

// tableWriter is a tabwriter over a buffer.
type tableWriter struct {
	*tabwriter.Writer
	buf *bufio.Writer
}

// Flush writes the table out.
func (t *tableWriter) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
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
