package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureFlagsErrors: a bad --route or --upstream-ca is an error
// naming the flag and the value at fault.
func TestCaptureFlagsErrors(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags captureFlags
		want  []string
	}{
		{captureFlags{Route: []string{"api.openai.com"}}, []string{"--route", `"api.openai.com"`, "HOST=URL"}},
		{captureFlags{Route: []string{"api.openai.com=ftp://x"}}, []string{"--route", "ftp://x", "not an absolute http(s) URL"}},
		{captureFlags{Route: []string{"a.example=http://x", "A.example=http://y"}}, []string{"--route", "a.example", "routed twice"}},
		{captureFlags{UpstreamCA: notPEM}, []string{"--upstream-ca", notPEM, "no PEM certificate"}},
	} {
		err := c.flags.validate()
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %v, want it to say %q", c.flags, err, w)
			}
		}
	}
	ok := captureFlags{Route: []string{"api.openai.com=http://127.0.0.1:8931/", "h.example:8443=https://10.0.0.1"}}
	if err := ok.validate(); err != nil || ok.opts.Routes["api.openai.com"] != "http://127.0.0.1:8931" || ok.opts.Routes["h.example:8443"] == "" {
		t.Errorf("validate: %v, routes %v", err, ok.opts.Routes)
	}
}
