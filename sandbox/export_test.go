package sandbox

// SetFailpoint lets external tests (package sandbox_test) crash a commit
// at a named step.
func SetFailpoint(f func(step string) error) { failpoint = f }
