package redact

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestControlRedacted: a control frame's request and answer go through
// the credential rules and the user's masks, as an MCP message does: a
// DSN's password, a key in staged content, a masked pattern in an answer.
func TestControlRedacted(t *testing.T) {
	m, err := NewMasker([]string{`ACME-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	p := NewFilter(m).Payload(tapefmt.Control{Method: "POST", Path: "/v1/tx/t/sql",
		Request: []byte(`{"dsn":"postgres://app:hunter2@db/x","sql":"SELECT $1","params":["sk-proj-abcdefghijklmnopqrstuvwxyz0123"]}`),
		Status:  200, Answer: []byte(`{"columns":["c"],"rows":[["ACME-1234"]],"rowcount":1}`)}).(tapefmt.Control)
	for _, secret := range []string{"hunter2", "sk-proj-abcdefghij", "ACME-1234"} {
		if strings.Contains(string(p.Request)+string(p.Answer), secret) {
			t.Errorf("%s left on the control frame: %s %s", secret, p.Request, p.Answer)
		}
	}
}
