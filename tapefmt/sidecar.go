package tapefmt

// Sidecar is the folder beside a tape for files that belong to it but are
// not part of it: NAME.jbx.d for NAME.jbx. It holds the match rules replay
// remembers (match.json) and the turntable's markers (markers.json). Nothing in it
// is covered by the tape's hash chain or seal; a tape opens, verifies and
// replays without it.
func Sidecar(tape string) string { return tape + ".d" }
