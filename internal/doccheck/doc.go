// Package doccheck holds the repository's documentation to its shape: the
// README stays a front door (short, the two commands at its top), every
// relative link in the Markdown files resolves, and every manual page in
// docs/ is reachable from the README. It has tests only.
package doccheck
