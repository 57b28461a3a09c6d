package redact

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		// user info goes, with or without a password
		"https://user:pass@api.example.com/v1":   "https://api.example.com/v1",
		"https://sk-secret@api.example.com/v1/":  "https://api.example.com/v1/",
		"http://127.0.0.1:8080":                  "http://127.0.0.1:8080",
		"https://api.example.com/v1?x=1&y=2":     "https://api.example.com/v1?x=1&y=2",
		"https://api.example.com/v1?y=2&x=1":     "https://api.example.com/v1?y=2&x=1", // kept byte for byte
		"https://api.example.com/v1?key=k&y=2":   "https://api.example.com/v1?y=2",
		"https://api.example.com/v1?b=2&token=t": "https://api.example.com/v1?b=2",
		// a query that loses a parameter is written back sorted
		"https://u:p@api.example.com/v1?z=1&api_key=k&a=%20": "https://api.example.com/v1?a=+&z=1",
		"https://api.example.com/v1?sig=s":                   "https://api.example.com/v1",
		// a query that does not parse goes whole
		"https://api.example.com/v1?a=%zz&key=k": "https://api.example.com/v1",
		"":                                       "",
		// a URL that does not parse goes whole
		"http://[::1":            "",
		"://no.scheme.example":   "",
		"http://h.example/%zz":   "",
		"http://h.example:port/": "",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactQuery(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                     "",
		"x=1":                  "x=1",
		"y=2&x=1&y=3":          "y=2&x=1&y=3", // nothing dropped: as sent
		"b=%2F&a":              "b=%2F&a",
		"api_key=s&x=1":        "x=1",
		"x=1&API_KEY=s":        "x=1",
		"KEY=a&sig=b&code=c":   "",
		"Token=t&model=m":      "model=m",
		"client_secret=s&n=1":  "n=1",
		"password=p&passwd=q":  "",
		"credentials=c&ok=1":   "ok=1",
		"X-Amz-Signature=s&n=": "n=",
		"auth=a&author=b":      "", // errs towards dropping
		"monkey=1&model=m":     "model=m",
		"a=%zz":                "", // does not parse
		"a=1;b=2":              "",
	} {
		if got := Query(in); got != want {
			t.Errorf("Query(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactEnv(t *testing.T) {
	t.Parallel()
	if Env(nil) != nil {
		t.Error("Env(nil) is not nil")
	}
	in := map[string]string{"OPENAI_API_KEY": "sk", "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s",
		"DB_PASSWORD": "p", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json", "SSH_AUTH_SOCK": "/s",
		"LANG": "C.UTF-8", "PATH": "/bin", "HOME": "/h", "JUKEBOX_SEED": "7"}
	orig := maps.Clone(in)
	out := Env(in)
	if got := slices.Sorted(maps.Keys(out)); !slices.Equal(got, []string{"HOME", "JUKEBOX_SEED", "LANG", "PATH"}) {
		t.Errorf("kept %v", got)
	}
	out["LANG"] = "changed"
	if !maps.Equal(in, orig) {
		t.Error("Env changed its input, or returned it")
	}
}

func TestRedactHeader(t *testing.T) {
	t.Parallel()
	if Header(nil) != nil {
		t.Error("Header(nil) is not nil")
	}
	in := http.Header{"Authorization": {"Bearer sk"}, "Proxy-Authorization": {"Basic x"}, "X-Api-Key": {"k"},
		"X-Goog-Api-Key": {"k"}, "X-Amz-Security-Token": {"t"}, "Cookie": {"c"}, "Set-Cookie": {"c"},
		"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}, "Accept": {"a", "b"}}
	out := Header(in)
	if got := slices.Sorted(maps.Keys(out)); !slices.Equal(got, []string{"Accept", "Anthropic-Version", "Content-Type"}) {
		t.Errorf("kept %v", got)
	}
	out["Accept"][0] = "changed"
	if in["Accept"][0] != "a" {
		t.Error("Header shares its values with its input")
	}
}

func TestRedactArgvForms(t *testing.T) {
	t.Parallel()
	if Argv(nil) != nil {
		t.Error("Argv(nil) is not nil")
	}
	in := []string{"agent", "-token", "t1", "--secret=", "key", "--api-key"}
	out := Argv(in)
	want := []string{"agent", "-token", "[redacted]", "--secret=[redacted]", "key", "--api-key"}
	if !slices.Equal(out, want) {
		t.Errorf("Argv = %q, want %q", out, want)
	}
	if in[2] != "t1" {
		t.Error("Argv changed its input")
	}
}

// TestRedactArgvCredentials: the argv forms that reached the tape before
// (-k VALUE, --bearer=VALUE, a DSN with a password, -H "Authorization:
// Bearer ...", credentials inside a shell script), and what must stay.
func TestRedactArgvCredentials(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want []string }{
		{[]string{"tool", "-k", "sk-abc123", "run"}, []string{"tool", "-k", Redacted, "run"}},
		{[]string{"tool", "--bearer=tok123456"}, []string{"tool", "--bearer=" + Redacted}},
		{[]string{"psql", "postgres://bob:hunter2@db.example/prod"}, []string{"psql", "postgres://bob:" + Redacted + "@db.example/prod"}},
		{[]string{"psql", "host=db password=hunter2 dbname=x"}, []string{"psql", "host=db password=" + Redacted + " dbname=x"}},
		{[]string{"curl", "-H", "Authorization: Bearer sk-live-abcdefgh1234", "https://h/v1"},
			[]string{"curl", "-H", "Authorization: Bearer " + Redacted, "https://h/v1"}},
		{[]string{"curl", "-u", "bob:pw1", "https://h"}, []string{"curl", "-u", "bob:" + Redacted, "https://h"}},
		{[]string{"sh", "-c", "curl -H 'x-api-key: abcdef123' 'https://h/v1?key=K123&x=1' -u bob:pw2"},
			[]string{"sh", "-c", "curl -H 'x-api-key: " + Redacted + "' 'https://h/v1?key=" + Redacted + "&x=1' -u bob:" + Redacted}},
		{[]string{"python3", "agent.py", "--json", `{"max_tokens": 100, "api_key": "sk-1234"}`},
			[]string{"python3", "agent.py", "--json", `{"max_tokens": 100, "api_key": "` + Redacted + `"}`}},
		// counts, ports and models are not secrets
		{[]string{"python3", "agent.py", "--max-tokens", "100", "--port", "8080", "-p", "80", "--model", "gpt-4o"},
			[]string{"python3", "agent.py", "--max-tokens", "100", "--port", "8080", "-p", "80", "--model", "gpt-4o"}},
	} {
		if got := Argv(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Argv(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestRunStartEnvURL: a base URL with user info or a key in its query is
// redacted in run.start's env as it is in upstreams (it was kept whole).
func TestRunStartEnvURL(t *testing.T) {
	t.Parallel()
	p := runStart(tapefmt.RunStart{Env: map[string]string{"OPENAI_BASE_URL": "http://bob:pw@gw.example/v1?key=K9&x=1", "LANG": "C"}})
	if got := p.Env["OPENAI_BASE_URL"]; got != "http://"+Redacted+"@gw.example/v1?key="+Redacted+"&x=1" {
		t.Errorf("env OPENAI_BASE_URL on the tape: %q", got)
	}
	if p.Env["LANG"] != "C" {
		t.Errorf("LANG: %q", p.Env["LANG"])
	}
}

func TestArgvAndHeaders(t *testing.T) {
	got := Argv([]string{"python", "agent.py", "--api-key", "sk-1", "--token=abc", "-v", "--model", "gpt-4o", "--password"})
	want := []string{"python", "agent.py", "--api-key", "[redacted]", "--token=[redacted]", "-v", "--model", "gpt-4o", "--password"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Auth-Key", "Cookie", "Openai-Organization-Token"} {
		if !secretHeader(h) {
			t.Errorf("header %s kept", h)
		}
	}
	for _, h := range []string{"Content-Type", "User-Agent", "Anthropic-Version", "X-Request-Id"} {
		if secretHeader(h) {
			t.Errorf("header %s dropped", h)
		}
	}
}

// TestFilterKeepsCredentialsOff: a writer with the filter drops credential
// headers, queries and environment variables, and keeps the rest.
func TestFilterKeepsCredentialsOff(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w, err := tapefmt.NewWriter(&buf, tapefmt.Options{Filter: NewFilter(nil)})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Env: map[string]string{"LANG": "C", "OPENAI_API_KEY": "sk-secret"}})
	w.Append(0, tapefmt.LLMRequest{Provider: "openai", Query: "api_key=sk-secret&x=1",
		Header: http.Header{"Authorization": {"Bearer sk-secret"}, "Content-Type": {"application/json"}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("sk-secret")) {
		t.Fatal("a secret reached the tape")
	}
	tp, err := tapefmt.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := tp.Frame(1)
	p, _ := f.Decode()
	req := p.(*tapefmt.LLMRequest)
	if req.Header.Get("Content-Type") != "application/json" || req.Query != "x=1" {
		t.Fatalf("redaction dropped too much: %+v %q", req.Header, req.Query)
	}
}
