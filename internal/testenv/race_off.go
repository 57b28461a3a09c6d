//go:build !race

package testenv

// Race says the tests run with the race detector (-race), which makes
// code that only computes up to twenty times slower: such a test runs
// smaller under it (CONTRIBUTING.md), whole without it.
const Race = false
