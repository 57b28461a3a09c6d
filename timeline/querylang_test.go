package timeline

import "testing"

// TestClassNames: each class has a name in ClassNames, in Classes' order.
func TestClassNames(t *testing.T) {
	if len(ClassNames) != len(Classes) {
		t.Fatalf("%d names for %d classes", len(ClassNames), len(Classes))
	}
	for i, n := range ClassNames {
		if c, ok := ClassNamed(n); !ok || c != Classes[i] {
			t.Errorf("ClassNamed(%q) = %v, %v; want %v", n, c, ok, Classes[i])
		}
	}
}
