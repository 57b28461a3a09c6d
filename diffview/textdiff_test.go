package diffview

import "testing"

func TestTextDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13"
	want := `--- a
+++ b
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
@@ -10,3 +10,4 @@
 10
 11
 12
+13
\ No newline at end of file
`
	if got := TextDiff("a", "b", a, b); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := TextDiff("a", "b", "", "x\n"); got != "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n" {
		t.Fatalf("new file: got\n%s", got)
	}
	if got := TextDiff("a", "b", a, a); got != "" {
		t.Fatalf("equal texts: got %q", got)
	}
}
