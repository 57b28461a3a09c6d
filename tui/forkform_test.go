package tui

import (
	"testing"

	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/themes"
)

// TestForkFormScope: the form's fork reaches every later call unless told
// "once", as `jukebox fork` does without --once; anything else is an error
// naming the field.
func TestForkFormScope(t *testing.T) {
	for value, want := range map[string]engine.Scope{"": engine.ScopeAll, "all": engine.ScopeAll, " once ": engine.ScopeOnce, "twice": ""} {
		st := NewStyles(themes.Default(), lipgloss.DefaultRenderer())
		f := newForkForm(&st, 3, nil)
		if value != "all" {
			f.fields[fieldScope].SetValue(value)
		}
		o, err := f.Overrides()
		switch {
		case want == "" && err == nil:
			t.Errorf("apply to %q: no error", value)
		case want != "" && (err != nil || o.Scope != want):
			t.Errorf("apply to %q: scope %q, %v; want %q", value, o.Scope, err, want)
		}
	}
}
