package pgbooth

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
)

// frame is one protocol message as it travels: its type byte and body.
// Messages the proxy passes on unchanged are never decoded; the ones it
// reads or writes itself go through pgproto3's message types.
type frame struct {
	typ  byte
	body []byte
}

// maxBody is PostgreSQL's own limit on an incoming message (1 GiB).
const maxBody = 0x3fffffff

// readFrame reads one typed message. The body is read as it arrives, so
// a length that the peer never sends costs nothing.
func readFrame(r *bufio.Reader) (frame, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return frame{}, err
	}
	n := int(int32(binary.BigEndian.Uint32(h[1:]))) - 4
	if n < 0 || n > maxBody {
		return frame{}, fmt.Errorf("invalid message length %d", n+4)
	}
	body, err := readBody(r, n)
	return frame{typ: h[0], body: body}, err
}

func readBody(r io.Reader, n int) ([]byte, error) {
	if n <= 64<<10 {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// readStartup reads an untyped startup packet (StartupMessage,
// SSLRequest, GSSEncRequest or CancelRequest) and decodes it.
func readStartup(r *bufio.Reader) (pgproto3.FrontendMessage, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(h[:]))) - 4
	if n < 4 || n > 10000 {
		return nil, fmt.Errorf("invalid startup packet length %d", n+4)
	}
	body, err := readBody(r, n)
	if err != nil {
		return nil, err
	}
	var m pgproto3.FrontendMessage
	switch code := binary.BigEndian.Uint32(body); code {
	case pgproto3.ProtocolVersion30, pgproto3.ProtocolVersion32:
		m = &pgproto3.StartupMessage{}
	case 80877103:
		m = &pgproto3.SSLRequest{}
	case 80877104:
		m = &pgproto3.GSSEncRequest{}
	case 80877102:
		m = &pgproto3.CancelRequest{}
	default:
		return nil, fmt.Errorf("unsupported protocol or request code %d", code)
	}
	return m, m.Decode(body)
}

// writeFrame writes f unchanged.
func writeFrame(w *bufio.Writer, f frame) {
	var h [5]byte
	h[0] = f.typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(f.body)+4))
	w.Write(h[:])
	w.Write(f.body)
}

// send encodes m onto w.
func send(w *bufio.Writer, m pgproto3.Message) {
	b, err := m.Encode(nil)
	if err != nil {
		panic(fmt.Sprintf("pgbooth: encode %T: %v", m, err)) // only the proxy's own messages are encoded
	}
	w.Write(b)
}

// decode fills m from f's body. pgproto3 decoders take the body without
// the type byte and length.
func decode[M pgproto3.Message](f frame, m M) (M, error) {
	return m, m.Decode(f.body)
}

// queue holds what one reader goroutine read, without bound, so that the
// server never waits on the proxy to take its output (a client's long
// pipeline could otherwise deadlock the two).
type queue struct {
	mu    sync.Mutex
	items []frame
	err   error
	ready chan struct{} // has a token whenever items or err may be new
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(f frame) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the next frame, or ok false and the reader's error (nil
// while it may still read more).
func (q *queue) pop() (f frame, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 {
		f = q.items[0]
		q.items[0] = frame{}
		q.items = q.items[1:]
		return f, true, nil
	}
	return frame{}, false, q.err
}

// pump reads frames from r into q until an error.
func pump(r *bufio.Reader, q *queue) {
	for {
		f, err := readFrame(r)
		if err != nil {
			q.fail(err)
			return
		}
		q.push(f)
	}
}
