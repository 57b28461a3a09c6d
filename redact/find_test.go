package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// pieces are what findText strings are made of: the rules' keys in every
// case, their neighbours, separators, quotes, values, word and dash runs.
var pieces = []string{
	"api_key", "API-KEY", "apikey", "x-api-key", "Secret_Key", "client_secret", "password", "PassWord",
	"passwd", "passphrase", "auth-token", "access_token", "refresh_token", "session_token", "my_", "--",
	"-", "_", "aws_secret_access_key", "AWS_SESSION_TOKEN", "authorization", "Proxy-Authorization",
	"proxy-", "set-", "Set-Cookie", "cookie", "bearer ", "Basic ", "http://", "https://", "ftp+ssl://",
	"x.y-z://", "9a://", "://", "@", ":", "=", " = ", ": ", "\"", "'", "\\\"", "\\", " ", "\n", "\t",
	",", ";", "}", "&", ")", "/", "user", "pw", "host.example", "sk-", "sk-proj-", "ABCDEFGHIJKLMNOPQRSTUVWX",
	"ghp_", "github_pat_", "AKIA", "0123456789ABCDEF", "xoxb-", "glpat-", "AIza", "abcdefghijklmnopqrstuvwxyz0123456789",
	"mysql", "mariadb", "mysqldump", " -u root", " -p", "-psecret", "|", "é", "\u212a", "\u017f", "token", "key",
}

func findText(r *rand.Rand) []byte {
	var b strings.Builder
	for range 1 + r.IntN(24) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return []byte(b.String())
}

// TestFindIsTheRegexp: each rule run only where its keys put a match
// finds exactly what its regexp finds over the whole text.
func TestFindIsTheRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	found, texts := 0, 12000
	if testenv.Race {
		texts = 3000 // 2.5 s under -race, not 10; go test without it compares all 12,000
	}
	for range texts {
		b := findText(r)
		hits := scanKeys(b)
		for i, ru := range anyText() {
			want := ru.re.FindAllSubmatchIndex(b, -1)
			got := ru.find(b, hits[i])
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("rule %d on %q:\nfind   %v\nregexp %v", i, b, got, want)
			}
			found += len(want)
		}
	}
	t.Logf("%d matches compared", found)
	if found < texts/20 {
		t.Fatalf("only %d matches in all: the texts do not exercise the rules", found)
	}
}

func FuzzFind(f *testing.F) {
	f.Add([]byte(`{"api_key": "abc", "url": "https://u:p@h"}`))
	f.Add([]byte(`mysql -u root -psecret; Authorization: Bearer x`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for i, ru := range anyText() {
			want := ru.re.FindAllSubmatchIndex(b, -1)
			if got := ru.find(b, scanKeys(b)[i]); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("rule %d on %q:\nfind   %v\nregexp %v", i, b, got, want)
			}
		}
	})
}
