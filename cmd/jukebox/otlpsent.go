package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jukebox-os/jukebox/export"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// What was sent where: a receiver keeps every copy of a span it is sent
// (Jaeger's memory store does), so export otlp sends a tape again to a
// receiver that has it whole only when asked (--all). The record is the
// sidecar's otlp.json, written after an export that lost nothing, live or
// not. A tape in a store has no sidecar here: it is sent every time.

// otlpSentFile is the record in a tape's sidecar folder.
const otlpSentFile = "otlp.json"

type otlpSent struct {
	Sent []otlpSentTo `json:"sent"`
}

type otlpSentTo struct {
	Endpoint string    `json:"endpoint"`
	TraceID  string    `json:"trace_id"`
	Spans    int       `json:"spans,omitempty"`
	Live     bool      `json:"live,omitempty"`
	At       time.Time `json:"at"`
}

// otlpTarget names the receiver ep sends to, as the record keys it.
func otlpTarget(ep export.Endpoint) string {
	if ep.URL != "" {
		return ep.URL
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if s := os.Getenv(v); s != "" {
			return s
		}
	}
	return ""
}

// sentBefore is the record of the tape at path sent whole to target, nil
// when there is none (or the tape is in a store).
func sentBefore(path, target string) *otlpSentTo {
	if tapefmt.IsRemote(path) || target == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(sidecar.Dir(path), otlpSentFile))
	if err != nil {
		return nil
	}
	var s otlpSent
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	for i := range s.Sent {
		if s.Sent[i].Endpoint == target {
			return &s.Sent[i]
		}
	}
	return nil
}

// noteSent records that the tape at path went to target whole.
func noteSent(path string, to otlpSentTo) error {
	if tapefmt.IsRemote(path) || to.Endpoint == "" {
		return nil
	}
	name := filepath.Join(sidecar.Dir(path), otlpSentFile)
	var s otlpSent
	if b, err := os.ReadFile(name); err == nil {
		json.Unmarshal(b, &s) // one that does not read is written anew
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	kept := s.Sent[:0]
	for _, e := range s.Sent {
		if e.Endpoint != to.Endpoint {
			kept = append(kept, e)
		}
	}
	s.Sent = append(kept, to)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return sidecar.WriteFile(name, append(b, '\n'))
}
