package tui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Keymap is the user's key bindings: an action's name (KeyActions) to the
// keys that do it, in place of its own.
type Keymap map[string][]string

// KeyAction is an action keys can be bound to.
type KeyAction struct {
	Name string   // as a keys file names it: "next_step"
	Keys []string // its keys by default
	What string   // what it does
}

// KeyActions are the actions of the timeline and the deck, by name.
func KeyActions() []KeyAction {
	var out []KeyAction
	tk, dk := newTimelineKeys(), newDeckKeys()
	for _, set := range []any{&tk, &dk} {
		eachBinding(set, func(name string, b *key.Binding) {
			out = append(out, KeyAction{Name: name, Keys: b.Keys(), What: b.Help().Desc})
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eachBinding calls f with each key.Binding field of the struct set
// points to, by its action name.
func eachBinding(set any, f func(name string, b *key.Binding)) {
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		if b, ok := v.Field(i).Addr().Interface().(*key.Binding); ok {
			f(actionName(v.Type().Field(i).Name), b)
		}
	}
}

// actionName is a field's name in snake case, an acronym one word:
// NextStep next_step, NextLLM next_llm.
func actionName(field string) string {
	rs := []rune(field)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// LoadKeymap reads a keys file: a JSON object of action names to lists of
// keys, `{"next_step": ["J"], "quit": ["q", "ctrl+d"]}`. An action or a
// key it does not know, an action with no key, and a key given to two
// actions are errors naming the file and the line.
func LoadKeymap(path string) (Keymap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var km Keymap
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&km); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s:%d: %v", path, lineAt(b, se.Offset), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%s:%d: %s takes a list of keys, such as [\"J\", \"shift+down\"]", path, lineAt(b, te.Offset), cmp.Or(te.Field, "each action"))
		}
		return nil, fmt.Errorf("%s: %v (want an object of action names to lists of keys)", path, err)
	}
	if err := km.check(); err != nil {
		name, _, _ := strings.Cut(err.Error(), ":")
		return nil, fmt.Errorf("%s:%d: %w", path, lineAt(b, int64(bytes.Index(b, []byte(`"`+name+`"`)))), err)
	}
	return km, nil
}

// lineAt is the line of byte off of b, from 1.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// check reports the first action of km that is not one, has no key or a
// key no terminal sends, or takes a key another action has: the error
// starts with the action's name and a colon.
func (km Keymap) check() error {
	known := map[string]KeyAction{}
	for _, a := range KeyActions() {
		known[a.Name] = a
	}
	for _, n := range slices.Sorted(maps.Keys(km)) {
		if _, ok := known[n]; !ok {
			return fmt.Errorf("%s: no such action (actions: %s)", n, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
		if len(km[n]) == 0 {
			return fmt.Errorf("%s: no key given (to keep its own keys, leave it out)", n)
		}
		for _, k := range km[n] {
			if !validKey(k) {
				return fmt.Errorf("%s: %q is no key a terminal sends (a character, or a name such as ctrl+d, shift+down, f5, pgup, alt+x)", n, k)
			}
		}
	}
	// Which actions each key does, once bound: a key the user gave may
	// do one only.
	does := map[string][]string{}
	for _, a := range KeyActions() {
		keys := a.Keys
		if k, ok := km[a.Name]; ok {
			keys = k
		}
		for _, k := range keys {
			does[k] = append(does[k], a.Name)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(km)) {
		for _, k := range km[n] {
			if others := slices.DeleteFunc(slices.Clone(does[k]), func(o string) bool { return o == n }); len(others) > 0 {
				return fmt.Errorf("%s: %q is %s's key too (bind that one to another key as well)", n, k, others[0])
			}
		}
	}
	return nil
}

// keyNames are the names bubbletea gives keys (tea.KeyMsg.String).
var keyNames = func() map[string]bool {
	m := map[string]bool{" ": true}
	for t := tea.KeyType(-200); t < 200; t++ {
		if s := t.String(); s != "" && s != "runes" && !strings.HasPrefix(s, "KeyType(") {
			m[s] = true
		}
	}
	return m
}()

// validKey reports whether k is a key a KeyMsg can be: one character, a
// key's name, either after alt+.
func validKey(k string) bool {
	k = strings.TrimPrefix(k, "alt+")
	return keyNames[k] || utf8.RuneCountInString(k) == 1
}

// apply binds the actions of km in the struct of bindings set points to.
func (km Keymap) apply(set any) {
	if len(km) == 0 {
		return
	}
	eachBinding(set, func(name string, b *key.Binding) {
		if keys, ok := km[name]; ok {
			b.SetKeys(keys...)
			b.SetHelp(strings.Join(keys, "/"), b.Help().Desc)
		}
	})
}
