package sandbox

// Files is the os-like file API over the staged view of a transaction:
// what is staged, over the real workspace. Names are relative to the
// workspace root. Reads see the staged view; writes, removals, new
// directories, symlinks, mode changes and renames are staged in the
// transaction and reach the real workspace only when it commits. Staging
// after Commit or Rollback fails with ErrClosed.
//
// Its methods are safe for use by several goroutines: they share the
// transaction's lock.
type Files struct {
	tx *Tx
}

// Files returns the file API over the staged view of the transaction.
func (tx *Tx) Files() *Files { return &Files{tx: tx} }
