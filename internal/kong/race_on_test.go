//go:build race

package kong

// raceDetector says the tests run with -race, which makes the
// comparisons with the former code take seconds.
const raceDetector = true
