// Package diffview aligns two timelines and renders them side by side. It is a
// pure renderer: data in, string out.
package diffview
