package themes

import (
	"reflect"
	"regexp"
	"testing"
)

func TestGet(t *testing.T) {
	for _, name := range names() {
		th, err := Get(name)
		if err != nil || th.Name != name {
			t.Fatalf("Get(%q) = %q, %v", name, th.Name, err)
		}
		if !known(name) {
			t.Fatalf("Known(%q) is false", name)
		}
	}
	if th, _ := Get(""); th.Name != "diner" {
		t.Fatalf("default theme is %q", th.Name)
	}
	if _, err := Get("vaporwave"); err == nil {
		t.Fatal("unknown theme accepted")
	}
}

// TestColours checks that coloured themes set every role for both
// backgrounds with a colour lipgloss understands, and plain sets none.
func TestColours(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)
	for _, th := range []Theme{Diner(), highContrast(), Plain()} {
		v := reflect.ValueOf(th)
		for i := range v.NumField() {
			c, ok := v.Field(i).Interface().(Color)
			if !ok {
				continue
			}
			name := v.Type().Field(i).Name
			if th.Colourless {
				if !c.IsZero() {
					t.Errorf("%s.%s sets a colour", th.Name, name)
				}
				continue
			}
			if !hex.MatchString(c.Light) || !hex.MatchString(c.Dark) {
				t.Errorf("%s.%s = %+v", th.Name, name, c)
			}
		}
	}
}
