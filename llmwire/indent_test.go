package llmwire

import (
	"strings"
	"testing"
)

// TestIndentOfDeepJSON: a request nested 9,990 deep was indented into a
// divergence report of 38 MB (1.4 GB to make); past maxPrettyDepth it is
// shown as it is. Shallow JSON is still indented, and strings holding
// brackets or escaped quotes count for nothing.
func TestIndentOfDeepJSON(t *testing.T) {
	deep := strings.Repeat("[", 9990) + strings.Repeat("]", 9990)
	if got := Indent([]byte(deep)); got != deep {
		t.Errorf("deep JSON: %d bytes shown for %d", len(got), len(deep))
	}
	if got := Indent([]byte(`{"a":[1,{"b":"[[[\"{{"}]}`)); got != "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"[[[\\\"{{\"\n    }\n  ]\n}" {
		t.Errorf("shallow JSON: %q", got)
	}
	if d := jsonDepth([]byte(`{"x":"]]]}}}\"[[["}`)); d != 1 {
		t.Errorf("depth of an object holding brackets in a string: %d", d)
	}
}
