package sandbox

// MaybeRunInit runs the namespace init when this process was started as
// one by the booth, and never returns then; otherwise it returns at once.
// Call it first thing in main (and in TestMain of packages whose tests run
// children in the booth).
func MaybeRunInit() {}
