package tapefmt

// SetBlobReadBack turns the writer's check of each encoded blob on or off,
// for the benchmark that measures what the check costs.
func SetBlobReadBack(on bool) { blobReadBack = on }
