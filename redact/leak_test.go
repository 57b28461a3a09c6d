package redact

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Secrets of the forms issue 31 saw reaching the tape, each planted once.
const (
	leakMySQL   = "MYSQLPW5501"
	leakPhrase  = "PHRASE5502"
	leakURLTok  = "URLTOKEN5503abcdef"
	leakURLPass = "URLPASS5504"
	leakSKProj  = "sk-proj-AbCdEf0123456789AbCdEf0123456789"
	leakGHP     = "ghp_0123456789abcdefABCDEF0123456789abcd"
	leakAWS     = "AWSSECRET5507/abcdefghijklmnopqrstuvwxyz12"
	leakCookie  = "sessionid=COOKIE5508"
	leakJSONKey = "JSONKEY5509"
	leakCred    = "AGENTCRED5510xyz"
	leakOpts    = "OPTSKEY5511"
	leakSentry  = "abcdef0123456789abcdef0123456789"
	// Signed URLs and a signature header (seen in a command line): an
	// Azure SAS sig, an Azure Functions key, a presigned S3 URL.
	leakSAS    = "SASSIGSECRET123"
	leakFunc   = "AZFUNCKEY456"
	leakAmzSig = "deadbeefsig0123"
	leakHdrSig = "HDRSIG555"
)

// leakScript is a shell script an agent runs or writes, holding a Cookie
// header and a JSON api_key.
const leakScript = `curl -H 'Cookie: ` + leakCookie + `' https://h.example/x
cat > cfg.json <<J
{"api_key": "` + leakJSONKey + `", "model": "gpt-4o"}
J`

// TestCredentialFormsInRunStart: each form planted in the command line or
// the environment leaves no trace in run.start.
func TestCredentialFormsInRunStart(t *testing.T) {
	t.Parallel()
	argvs := [][]string{
		{"mysql", "-uroot", "-p" + leakMySQL, "shop"},
		{"sh", "-c", "mysql -u root -p" + leakMySQL + " shop"},
		{"gpg", "--batch", "--passphrase=" + leakPhrase, "-d", "f.gpg"},
		{"sh", "-c", "gpg --passphrase " + leakPhrase + " -d f.gpg"},
		{"git", "clone", "https://" + leakURLTok + "@github.com/o/r"},
		{"git", "clone", "https://bob:" + leakURLPass + "@github.com/o/r"},
		{"agent", leakSKProj},
		{"sh", "-c", "echo " + leakGHP + " | gh auth login --with-token"},
		{"aws", "configure", "set", "aws_secret_access_key", leakAWS},
		{"sh", "-c", "aws configure set aws_secret_access_key " + leakAWS},
		{"sh", "-c", leakScript},
		{"python3", "-c", `import requests; requests.get(u, headers={"Cookie": "` + leakCookie + `"})`},
		{"curl", "-H", "X-Signature: " + leakHdrSig, "https://a.blob.example/c?sv=2020-08-04&sig=" + leakSAS + "&code=" + leakFunc +
			"&X-Amz-Signature=" + leakAmzSig},
	}
	env := map[string]string{"AGENT_CRED": leakCred, "AGENT_OPTS": "--api-key " + leakOpts,
		"SENTRY_DSN": "https://" + leakSentry + "@o1.ingest.sentry.io/1", "AGENT_HINT": leakSKProj,
		"LANG": "C.UTF-8"}
	for _, argv := range argvs {
		p := NewFilter(nil).Payload(tapefmt.RunStart{Argv: argv, Env: env}).(tapefmt.RunStart)
		all := strings.Join(p.Argv, " ")
		for k, v := range p.Env {
			all += " " + k + "=" + v
		}
		for _, s := range []string{leakMySQL, leakPhrase, leakURLTok, leakURLPass, leakSKProj, leakGHP, "AWSSECRET5507",
			"COOKIE5508", leakJSONKey, leakCred, leakOpts, leakSentry, leakSAS, leakFunc, leakAmzSig, leakHdrSig} {
			if strings.Contains(all, s) {
				t.Errorf("%q: %s is on the tape: %q", argv, s, all)
			}
		}
	}
}

// TestCredentialFormsInBodies: a script the agent writes (a file's blob, a
// tool call's arguments) and a bare token in a prompt are masked, with no
// pattern given.
func TestCredentialFormsInBodies(t *testing.T) {
	t.Parallel()
	f := NewFilter(nil)
	for _, in := range []string{leakScript, `{"content": "use ` + leakSKProj + ` and ` + leakGHP + `"}`,
		"aws configure set aws_secret_access_key " + leakAWS + "\n"} {
		got := string(f.Blob([]byte(in)))
		args := string(f.Payload(tapefmt.ToolCall{Args: jsonString(in)}).(tapefmt.ToolCall).Args)
		for _, s := range []string{"COOKIE5508", leakJSONKey, leakSKProj, leakGHP, "AWSSECRET5507"} {
			if strings.Contains(got, s) || strings.Contains(args, s) {
				t.Errorf("%s kept in %q (args %q)", s, got, args)
			}
		}
	}
}

// TestOrdinaryWordsKept: words and counts that only look like credentials
// stay as they are, in bodies and in the command line.
func TestOrdinaryWordsKept(t *testing.T) {
	t.Parallel()
	f := NewFilter(nil)
	for _, in := range []string{
		`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"the key to a good password policy is rotation; token budgets matter"}]}`,
		`{"logprobs":{"content":[{"token":"Hello","logprob":-0.1}]},"usage":{"prompt_tokens":5}}`,
		"pip install scikit-learn  # sk-learn is its old name; ghp is not a token\n",
		`data: {"choices":[{"delta":{"content":"Set the password in the settings page."}}]}` + "\n\n",
		"ssh -p2222 git@github.com\n",
	} {
		if got := string(f.Blob([]byte(in))); got != in {
			t.Errorf("Blob changed ordinary text:\n in %q\nout %q", in, got)
		}
	}
	argv := []string{"ssh", "-p2222", "git@github.com", "--model", "gpt-4o", "--max-tokens", "100", "https://github.com/o/r"}
	if got := Argv(argv); !slices.Equal(got, argv) {
		t.Errorf("Argv(%q) = %q", argv, got)
	}
	env := map[string]string{"GIT_URL": "ssh://git@github.com/o/r", "PAGER": "less -R"}
	if got := NewFilter(nil).Payload(tapefmt.RunStart{Env: env}).(tapefmt.RunStart).Env; got["GIT_URL"] != env["GIT_URL"] || got["PAGER"] != env["PAGER"] {
		t.Errorf("env changed: %q", got)
	}
}

// TestSecretsInQueriesAndHeaders: a token of a known format, or what a
// --redact pattern matches, in a query value or in the value of a header
// of any name, is masked in the request frames and the response frames'
// headers, with or without patterns. They were kept: only credential
// names (?api_key=, Authorization) were dropped.
func TestSecretsInQueriesAndHeaders(t *testing.T) {
	t.Parallel()
	m, err := NewMasker([]string{`MYSECRET-[A-Z0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	for _, mask := range []*Masker{nil, m} {
		f := NewFilter(mask)
		secrets := []string{leakSKProj, leakGHP}
		if mask != nil {
			secrets = append(secrets, "MYSECRET-QQQ1", "MYSECRET-HDR2")
		}
		query := "q=" + leakSKProj + "&page=2&x=MYSECRET-QQQ1"
		header := http.Header{"X-Trace": {"MYSECRET-HDR2 " + leakGHP}, "Accept": {"*/*"}}
		var all []string
		for _, p := range []tapefmt.Payload{
			tapefmt.LLMRequest{Query: query, Header: header.Clone()},
			tapefmt.HTTPRequest{Query: query, Header: header.Clone()},
			tapefmt.LLMResponse{Header: header.Clone()},
			tapefmt.HTTPResponse{Header: header.Clone()},
		} {
			all = append(all, fmt.Sprint(f.Payload(p)))
		}
		got := strings.Join(all, "\n")
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Errorf("patterns %v: %s is on the tape:\n%s", mask.Patterns(), s, got)
			}
		}
		if !strings.Contains(got, "page=2") || !strings.Contains(got, "*/*") {
			t.Errorf("patterns %v: the rest of the query and headers is not kept:\n%s", mask.Patterns(), got)
		}
	}
	// Nothing to mask: the query is kept byte for byte.
	if q := NewFilter(nil).Payload(tapefmt.HTTPRequest{Query: "b=2&a=1"}).(tapefmt.HTTPRequest).Query; q != "b=2&a=1" {
		t.Errorf("a query without secrets became %q", q)
	}
}
