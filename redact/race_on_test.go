//go:build race

package redact

// raceDetector says the tests run with -race, which makes each regexp
// run about twenty times slower.
const raceDetector = true
