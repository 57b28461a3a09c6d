package tapefmt

// WithoutBlobReadBack returns o with the writer's check of each encoded blob
// turned off, for the benchmark that measures what the check costs.
func WithoutBlobReadBack(o Options) Options {
	o.noBlobReadBack = true
	return o
}
