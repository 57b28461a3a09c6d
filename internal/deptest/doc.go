// Package deptest holds the module's import rules to its code: which
// package may import which (layers, each importing only layers below
// it), the imports that must never happen, and what the default build
// leaves out. The rules are written in ARCHITECTURE.md; the test holds
// that list and its own table together. It has tests only.
package deptest
