"""The control API client's HTTP/1.1 (jukebox/_control.py), against a
server that writes the bytes each test scripts: answers by length and in
chunks as Go's net/http writes them, connections closed while idle, in
an answer, or on purpose. The SDK's other tests run it against the real
jukebox."""

import os
import socket
import sys
import threading
import unittest
from typing import Callable, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from jukebox._control import Control, _split_url  # noqa: E402
from jukebox.errors import JukeboxError  # noqa: E402

OK = b'{"ok": true}'


def answer(body: bytes = OK, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 " + status.encode() + b"\r\nContent-Type: application/json\r\n" + extra
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def chunked(*parts: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in parts:
        out += f"{len(p):x}\r\n".encode() + p + b"\r\n"
    return out + b"0\r\n\r\n"


class Scripted:
    """A TCP server on loopback: each request read is handed to script,
    which writes what it likes and says whether to keep the connection."""

    def __init__(self, script: Callable[[int, bytes, socket.socket], bool]) -> None:
        self.script = script
        self.requests: List[Tuple[int, bytes]] = []  # (connection, request)
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.conns = 0
        self.clients: List[Control] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.lsock.accept()
            except OSError:
                return
            self.conns += 1
            threading.Thread(target=self._conn, args=(self.conns, conn), daemon=True).start()

    def _conn(self, n: int, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        with conn:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = f.readline()
                    if not line:
                        return
                    head += line
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                req = head + f.read(length)
                self.requests.append((n, req))
                if not self.script(len(self.requests), req, conn):
                    return

    def close(self) -> None:
        self.lsock.close()
        for c in self.clients:
            c.close()

    def control(self) -> Control:
        c = Control(f"http://127.0.0.1:{self.port}", "tok")
        self.clients.append(c)
        return c


class ControlHTTPTest(unittest.TestCase):
    def serve(self, script: Callable[[int, bytes, socket.socket], bool]) -> Scripted:
        s = Scripted(script)
        self.addCleanup(s.close)
        return s

    def test_request_and_kept_alive(self):
        def script(i, req, conn):
            conn.sendall(answer(b'{"n": %d}' % i))
            return True
        s = self.serve(script)
        c = s.control()
        self.assertEqual(c.call("POST", "tx/begin", {"a": 1}), {"n": 1})
        self.assertEqual(c.call("GET", "breaker"), {"n": 2})
        self.assertEqual(s.conns, 1, "the second request opened a connection of its own")
        post, get = s.requests[0][1], s.requests[1][1]
        self.assertTrue(post.startswith(b"POST /v1/tx/begin HTTP/1.1\r\n"), post)
        self.assertIn(f"\r\nHost: 127.0.0.1:{s.port}\r\n".encode(), post)
        self.assertIn(b"\r\nAuthorization: Bearer tok\r\n", post)
        self.assertIn(b"\r\nContent-Length: 8\r\n", post)
        self.assertTrue(post.endswith(b'\r\n\r\n{"a": 1}'), post)
        self.assertTrue(get.startswith(b"GET /v1/breaker HTTP/1.1\r\n"), get)
        self.assertNotIn(b"Content-Length", get)

    def test_chunked_answer(self):
        body = b'{"frames": "' + b"x" * 70000 + b'"}'
        def script(i, req, conn):
            conn.sendall(chunked(body[:5], body[5:4096], body[4096:]) if i == 1 else answer())
            return True
        s = self.serve(script)
        c = s.control()
        self.assertEqual(len(c.call("GET", "frames")["frames"]), 70000)
        self.assertEqual(c.call("GET", "breaker"), {"ok": True})  # the chunks' end was read whole
        self.assertEqual(s.conns, 1)

    def test_large_request_body(self):
        def script(i, req, conn):
            conn.sendall(answer(b'{"len": %d}' % len(req.split(b"\r\n\r\n", 1)[1])))
            return True
        s = self.serve(script)
        data = b"y" * (1 << 20)
        self.assertEqual(s.control().send("POST", "tx/t/batch", data, "application/octet-stream"), {"len": 1 << 20})

    def test_idle_close_sends_again(self):
        # The server closes a kept-alive connection it found idle: the
        # request that finds it closed is sent once more on a new one.
        def script(i, req, conn):
            conn.sendall(answer())
            return i != 1
        s = self.serve(script)
        c = s.control()
        c.call("GET", "breaker")
        self.assertEqual(c.call("POST", "end", {}), {"ok": True})
        self.assertEqual([n for n, _ in s.requests], [1, 2])

    def test_close_in_answer_is_not_sent_again(self):
        # Cut in the middle of its answer, a request was served: sending it
        # again could commit twice.
        def script(i, req, conn):
            if i == 1:
                conn.sendall(answer())
                return True
            conn.sendall(answer(b'{"committed": 3}')[:-4])
            return False
        s = self.serve(script)
        c = s.control()
        c.call("GET", "breaker")
        with self.assertRaisesRegex(JukeboxError, "does not answer.*closed the connection 12 bytes into an answer of 16") as cm:
            c.call("POST", "tx/t/commit", {})
        self.assertTrue(getattr(cm.exception, "unanswered", False))
        self.assertEqual(len(s.requests), 2)

    def test_no_answer_on_a_new_connection_is_an_error(self):
        s = self.serve(lambda i, req, conn: False)
        with self.assertRaisesRegex(JukeboxError, "does not answer.*without an answer"):
            s.control().call("GET", "breaker")
        self.assertEqual(len(s.requests), 1)

    def test_connection_close_and_interim(self):
        def script(i, req, conn):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" + answer(extra=b"Connection: close\r\n"))
            return False
        s = self.serve(script)
        c = s.control()
        self.assertEqual(c.call("GET", "breaker"), {"ok": True})
        self.assertEqual(c.call("GET", "breaker"), {"ok": True})
        self.assertEqual(s.conns, 2)

    def test_error_answer(self):
        def script(i, req, conn):
            conn.sendall(answer(b'{"error": {"type": "unauthorized", "message": "bad token"}}', "401 Unauthorized"))
            return True
        s = self.serve(script)
        from jukebox.errors import AuthError
        with self.assertRaisesRegex(AuthError, "bad token"):
            s.control().call("GET", "breaker")

    def test_not_http(self):
        def script(i, req, conn):
            conn.sendall(b"SSH-2.0-OpenSSH\r\n")
            return False
        s = self.serve(script)
        with self.assertRaisesRegex(JukeboxError, "does not answer.*not an HTTP answer"):
            s.control().call("GET", "breaker")

    def test_refused(self):
        s = self.serve(lambda i, req, conn: False)
        s.close()
        with self.assertRaisesRegex(JukeboxError, f"at http://127.0.0.1:{s.port} does not answer"):
            s.control().call("GET", "breaker")

    def test_split_url(self):
        self.assertEqual(_split_url("http://127.0.0.1:4321"), ("127.0.0.1", 4321, ""))
        self.assertEqual(_split_url("http://[::1]:80/run/x"), ("::1", 80, "/run/x"))
        self.assertEqual(_split_url("http://localhost"), ("localhost", 80, ""))
        for bad in ("https://127.0.0.1:1", "http://:80", "http://h:port", "127.0.0.1:80", "http://[::1"):
            with self.assertRaises(ValueError, msg=bad):
                _split_url(bad)
            with self.assertRaisesRegex(JukeboxError, "is not an http:// URL"):
                Control(bad, "t")


if __name__ == "__main__":
    unittest.main()
