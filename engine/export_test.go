package engine

import (
	"net/http"
	"sync"

	"github.com/jukebox-os/jukebox/internal/runca"
)

var caKeys struct {
	sync.Mutex
	der [][]byte
}

func init() {
	onRunCA = func(ca *runca.CA) {
		caKeys.Lock()
		caKeys.der = append(caKeys.der, ca.PrivateKeyDER())
		caKeys.Unlock()
	}
}

// RunCAKeys are the private keys (PKCS #8 DER) of every run CA this test
// binary made so far, for the tests that scan tapes for them.
func RunCAKeys() [][]byte {
	caKeys.Lock()
	defer caKeys.Unlock()
	return append([][]byte(nil), caKeys.der...)
}

// WaitBodies waits until m read every recorded request body in the
// background (readBodies), for benchmarks of what comes after.
func (m *Matcher) WaitBodies() { <-m.bodiesRead }

// WaitHandlerBodies is WaitBodies for the matcher of a NewReplayHandler.
func WaitHandlerBodies(h http.Handler) { h.(*proxy).backend.(*tapeBackend).m.WaitBodies() }
