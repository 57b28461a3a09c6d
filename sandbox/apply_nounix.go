//go:build !unix

package sandbox

// Stubs for the commit's unix-only steps, beside those in
// platform_nounix.go: there is no booth here (Supported fails first).

type entryMap = map[int]struct{}

func (a *applier) openAside(string, bool) (entryMap, error)        { return nil, Supported() }
func (a *applier) forward([]Change, entryMap, []fingerprint) error { return Supported() }
func (a *applier) undo([]Change, entryMap) error                   { return Supported() }
func (a *applier) cleanup([]Change) error                          { return Supported() }
func (a *applier) usedSib() bool                                   { return false }

func verify(string, []Change, []fingerprint) []string { return nil }
func hasOverlayOrigin(string) bool                    { return false }

func (r *commitRun) realChanged() ([]Conflict, error) { return nil, Supported() }

func originIs(string, string) bool { return false }
