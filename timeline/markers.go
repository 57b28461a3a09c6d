package timeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// MarkersFile is the turntable's markers in a tape's sidecar folder
// (sidecar.Dir): never in the tape, whose hash chain and seal they
// would break.
const MarkersFile = "markers.json"

// Marker is a frame a user marked, with a note.
type Marker struct {
	Frame int    `json:"frame"`
	Note  string `json:"note,omitempty"`
}

// LoadMarkers reads the markers kept beside the tape at path: none when
// there are none; a file that does not read is an error naming it. A tape
// in a store keeps its markers beside its object: Timeline.Markers reads
// those.
func LoadMarkers(path string) ([]Marker, error) {
	if tapefmt.IsRemote(path) {
		return nil, nil // a store's tape: no folder beside it here
	}
	file := filepath.Join(sidecar.Dir(path), MarkersFile)
	raw, err := os.ReadFile(file)
	return parseMarkers(file, raw, err)
}

// Markers reads the markers kept beside the timeline's tape, wherever it
// lies: in its sidecar folder, or beside its object in a store (uploaded
// with it).
func (tl *Timeline) Markers() ([]Marker, error) {
	raw, err := sidecar.Read(tl.t, MarkersFile)
	return parseMarkers(sidecar.Dir(tl.path)+"/"+MarkersFile, raw, err)
}

// parseMarkers reads a markers file's bytes (or its read error: none when
// it is not there), naming the file in any error.
func parseMarkers(file string, raw []byte, err error) ([]Marker, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Markers []Marker `json:"markers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return doc.Markers, nil
}

// SaveMarkers keeps markers beside the tape at path (the sidecar folder
// made if missing), replacing the file whole; no markers removes it.
func SaveMarkers(path string, markers []Marker) error {
	if tapefmt.IsRemote(path) {
		return fmt.Errorf("%s: %w", path, sidecar.ErrRemote)
	}
	dir := sidecar.Dir(path)
	file := filepath.Join(dir, MarkersFile)
	if len(markers) == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		os.Remove(dir) // only when empty: match rules may live there too
		return nil
	}
	sort.Slice(markers, func(i, j int) bool { return markers[i].Frame < markers[j].Frame })
	raw, err := json.MarshalIndent(map[string]any{"markers": markers}, "", "  ")
	if err != nil {
		return err
	}
	return sidecar.WriteFile(file, append(raw, '\n'))
}
