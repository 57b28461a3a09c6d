package engine

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUpstreamConnectionsAckAtOnce: the live backend's connections to
// upstreams acknowledge each read at once (TCP_QUICKACK re-armed): a
// connection kept alive for request after request otherwise falls into
// Linux's delayed acknowledgements, and an upstream with Nagle's algorithm
// on that writes its answer's head and body apart waited 40 ms a call for
// it (an 800-call run: 36 s through jukebox, 1.5 s without).
func TestUpstreamConnectionsAckAtOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					c.Write([]byte("head\n"))
					c.Write([]byte("body\n"))
				}
			}()
		}
	}()
	quick := func(c net.Conn) int {
		raw, err := c.(interface {
			SyscallConn() (syscall.RawConn, error)
		}).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		v := -1
		raw.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK) })
		return v
	}
	live := newLive(nil, RunOptions{}).client.Transport.(*http.Transport).DialContext
	for _, c := range []struct {
		name string
		dial func(context.Context, string, string) (net.Conn, error)
		want int
	}{{"a plain connection", (&net.Dialer{}).DialContext, 0}, {"the live backend's", live, 1}} {
		conn, err := c.dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		for range 20 { // request after request, as a client kept alive sends them
			conn.Write([]byte("request\n"))
			r.ReadString('\n')
			r.ReadString('\n')
		}
		if got := quick(conn); got != c.want {
			t.Errorf("%s: TCP_QUICKACK reads %d after 20 exchanges, want %d", c.name, got, c.want)
		}
		conn.Close()
	}
}
