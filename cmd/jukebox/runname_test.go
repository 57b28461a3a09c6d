package main

import "testing"

// TestRunName: a tape's default name is the script's or the command's,
// never inline code ("sh -c 'curl ...; echo 1.1'" once named a tape
// "1'.jbx" with quotes and semicolons in it).
func TestRunName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"python3", "agent.py"}, "agent"},
		{[]string{"python3", "-u", "dir/agent.py", "--x"}, "agent"},
		{[]string{"node", "index.mjs"}, "index"},
		{[]string{"sh", "-c", `curl "$URL/v1/models"; echo "exit $?"; python3 -c "print(1.1)"`}, "sh"},
		{[]string{"python3", "-c", "import x; x.run()"}, "python3"},
		{[]string{"/usr/bin/env"}, "env"},
		{[]string{"./my agent!.sh"}, "my_agent_"},
		{[]string{".hidden"}, "run"},
	} {
		if got := runName(c.argv); got != c.want {
			t.Errorf("runName(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}
