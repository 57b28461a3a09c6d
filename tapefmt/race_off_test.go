//go:build !race

package tapefmt

// raceDetector says the tests run with -race, which makes the largest
// round trips take minutes.
const raceDetector = false
