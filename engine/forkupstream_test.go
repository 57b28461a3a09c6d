package engine

import (
	"net"
	"testing"
)

// TestForkUpstreams (issue 33 item 11): a fork's live calls go to the
// upstream given, else the environment's, else the one the parent was
// recorded against when it answers, else the public API.
func TestForkUpstreams(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	live := "http://" + ln.Addr().String() + "/v1"
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := "http://" + dead.Addr().String() + "/v1"
	dead.Close()
	recorded := map[string]string{"openai": live, "anthropic": gone}
	for _, c := range []struct {
		name     string
		explicit map[string]string
		env      []string
		want     string // openai's
		took     bool
	}{
		{"recorded, answering", nil, nil, live, true},
		{"given", map[string]string{"openai": "http://127.0.0.1:1/v1"}, nil, "http://127.0.0.1:1/v1", false},
		{"in the environment", nil, []string{"OPENAI_BASE_URL=http://127.0.0.1:2/v1"}, "http://127.0.0.1:2/v1", false},
	} {
		got, took := ForkUpstreams(c.explicit, c.env, recorded)
		ups := resolveUpstreams(got, envMap(c.env))
		if ups["openai"] != c.want || (len(took) == 1) != c.took {
			t.Errorf("%s: openai goes to %q (took %v), want %q", c.name, ups["openai"], took, c.want)
		}
		if ups["anthropic"] == gone {
			t.Errorf("%s: an upstream that does not answer was taken", c.name)
		}
	}
}
