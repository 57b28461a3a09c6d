package timeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// BisectFile is the file of a tape's sidecar folder where jukebox bisect
// TAPE --check keeps its probes and its answer.
const BisectFile = "bisect.json"

// BisectState is BisectFile: the verdicts of the probes made, by fork
// frame, run, change and check (reused by a later bisect with the same
// change and check), and the last point of no return found.
type BisectState struct {
	Probes map[string]BisectVerdict `json:"probes"`
	Found  *BisectFound             `json:"found,omitempty"`
}

// BisectVerdict is one probe's outcome: the fork, whether the check
// passed, what its live calls cost and how its agent exited.
type BisectVerdict struct {
	Tape string  `json:"tape"`
	Good bool    `json:"good"`
	Cost float64 `json:"cost_usd"`
	Exit int     `json:"agent_exit"`
}

// BisectFound is a bisect's answer: the last model call at which the
// change rescues the run (-1 for none), its llm.request frame (-1 for
// none) and its step (1 for model call 0).
type BisectFound struct {
	Change string `json:"change"` // the fork flags, as given
	Check  string `json:"check"`
	Call   int    `json:"call"`
	Frame  int64  `json:"frame"`
	Step   int    `json:"step"`
}

// ReadBisect reads t's BisectFile: nil and no error when there is none.
func ReadBisect(t *tapefmt.Tape) (*BisectState, error) {
	b, err := sidecar.Read(t, BisectFile)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, sidecar.ErrRemote) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s BisectState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", BisectFile, err)
	}
	return &s, nil
}
