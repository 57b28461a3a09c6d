package pgbooth

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// failingWriter is a client connection that is gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestFlushSendsWhatLeaveQueued is the TestDisconnectDuringCopy flake
// (about 1 run in 100): the server's CopyInResponse is passed to a client
// that has just disconnected; the write fails at flush, so leave queues
// the CopyFail and Sync that end the COPY. They must reach the server in
// that same flush: the relay then waits on the server alone, which waits
// on them, and the session hung until the booth gave up on it.
func TestFlushSendsWhatLeaveQueued(t *testing.T) {
	var server bytes.Buffer
	r := &relay{u: &upstream{w: bufio.NewWriter(&server)}, cw: bufio.NewWriter(failingWriter{}),
		inCycle: true, await: true, copyIn: true, needSync: true}
	r.cw.WriteByte('G') // the CopyInResponse on its way to the client
	r.flush()
	if !r.gone {
		t.Fatal("a failed write to the client did not end it")
	}
	got := server.Bytes()
	if len(got) == 0 || got[0] != 'f' || !bytes.Contains(got, []byte{'S', 0, 0, 0, 4}) {
		t.Fatalf("the server was sent %q; want a CopyFail then a Sync, now", got)
	}
}

// TestSyncReadDuringCopy is the other path of the TestDisconnectDuringCopy
// flake: the client sent Parse, Bind, Execute and Sync for a COPY FROM
// STDIN at once; the relay read the Sync only after the server's
// CopyInResponse. The server ignores a Sync in COPY, so when the client
// then disconnects, the relay must send a Sync of its own after the
// CopyFail, or the server waits for one and the session never settles.
func TestSyncReadDuringCopy(t *testing.T) {
	var server bytes.Buffer
	r := &relay{u: &upstream{w: bufio.NewWriter(&server)}, inCycle: true, copyIn: true}
	r.fromClient(frame{typ: 'S'})
	server.Reset()
	r.u.w.Flush()
	server.Reset()
	r.leave()
	r.u.w.Flush()
	got := server.Bytes()
	if len(got) == 0 || got[0] != 'f' || !bytes.Contains(got, []byte{'S', 0, 0, 0, 4}) {
		t.Fatalf("after the client left mid-COPY the server was sent %q; want a CopyFail then a Sync", got)
	}
}
