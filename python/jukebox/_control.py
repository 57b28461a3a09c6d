"""The control API client, and `jukebox serve` for agents that run on
their own. docs/control-api.md is the API's reference."""

import json
import os
import socket
import threading
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

if TYPE_CHECKING:
    import subprocess

from .errors import AuthError, BreakerTripped, CommitConflict, JukeboxError, SandboxViolation, SQLError

API = "v1"

#: The control URLs of the runs this process's SDK serves: their variables
#: are in os.environ while a track runs, and a Jukebox made then must not
#: take them for a `jukebox record` around the process.
_SERVED: Set[str] = set()


def jukebox_bin() -> str:
    """The jukebox binary: $JUKEBOX_BIN, else `jukebox` on PATH."""
    path = os.environ.get("JUKEBOX_BIN")
    if not path:
        import shutil
        path = shutil.which("jukebox")
    if not path:
        raise JukeboxError(
            "jukebox binary not found: set JUKEBOX_BIN to it or put jukebox on PATH "
            "(go build -o ~/bin/jukebox ./cmd/jukebox in the repository)")
    if not os.access(path, os.X_OK):
        raise JukeboxError(f"jukebox binary {path} is not executable (from JUKEBOX_BIN or PATH)")
    return path


def _error(status: int, body: Dict[str, Any]) -> JukeboxError:
    raw = body.get("error") or {}
    err: Dict[str, Any] = raw if isinstance(raw, dict) else {"message": str(raw)}
    e = _typed_error(status, err)
    e.rolled_back = err.get("rolled_back") is True
    return e


def _typed_error(status: int, err: Dict[str, Any]) -> JukeboxError:
    msg = str(err.get("message") or f"HTTP {status}")
    kind = err.get("type", "")
    if status == 401 or kind == "unauthorized":
        return AuthError(msg)
    if kind == "sql":
        return SQLError(msg, str(err.get("sqlstate") or ""))
    if kind == "sandbox_violation":
        return SandboxViolation(msg)
    if kind == "commit_conflict":
        conflicts = err.get("conflicts")
        return CommitConflict(msg, conflicts if isinstance(conflicts, list) else None)
    return JukeboxError(msg)


class BadAnswer(OSError):
    """What came back is not an HTTP answer this client reads."""


class Closed(ConnectionResetError):
    """The server closed the connection before it answered (one that was
    idle too long: the request is sent again on a new one)."""


def _split_url(base: str) -> Tuple[str, int, str]:
    """host, port and path of an http:// URL (urllib.parse's urlsplit, whose
    import costs more than the rest of the SDK's)."""
    if not base.startswith("http://"):
        raise ValueError("not http://")
    netloc, slash, path = base[len("http://"):].partition("/")
    netloc = netloc.rpartition("@")[2]
    if netloc.startswith("["):
        host, bracket, rest = netloc[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError("bad host")
    else:
        host, _, port = netloc.partition(":")
    if not host or (port and not port.isdigit()):
        raise ValueError("bad host or port")
    return host, int(port) if port else 80, slash + path if slash else ""


class _Conn:
    """One kept-alive HTTP/1.1 connection to a control API: the requests
    that API takes (a method, a path and a body of bytes) and the answers
    Go's net/http writes (a length or chunks). http.client, which did this
    before, took about 40 ms of each process's start to import."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.pid = os.getpid()
        self.sock = socket.create_connection((host, port), timeout)
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.rfile = self.sock.makefile("rb")
        except BaseException:
            self.sock.close()
            raise

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()

    def request(self, method: str, target: str, data: Optional[bytes], headers: Dict[str, str]) -> Tuple[int, bytes, bool]:
        """The answer's status and body, and whether the connection can be
        used again."""
        head = [f"{method} {target} HTTP/1.1", f"Host: {self.host}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if data is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(data or b'')}")
        msg = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if data and len(data) <= 1 << 16:
            self.sock.sendall(msg + data)
        else:
            self.sock.sendall(msg)
            if data:
                self.sock.sendall(data)
        try:
            return self._answer(method)
        except ValueError as e:  # a number that is not one
            raise BadAnswer(f"a malformed HTTP answer ({e})") from None

    def _line(self) -> bytes:
        line = self.rfile.readline(1 << 16)
        if len(line) >= 1 << 16:
            raise BadAnswer("an HTTP answer's line is over 64 KiB")
        return line

    def _answer(self, method: str) -> Tuple[int, bytes, bool]:
        while True:
            line = self._line()
            if not line:
                raise Closed("the server closed the connection without an answer")
            version, _, rest = line.decode("latin-1").partition(" ")
            if not version.startswith("HTTP/1."):
                raise BadAnswer(f"not an HTTP answer: {line[:60]!r}")
            status = int(rest[:3])
            fields: Dict[str, str] = {}
            while True:
                line = self._line()
                if line in (b"\r\n", b"\n"):
                    break
                if not line:
                    raise BadAnswer("the server closed the connection in an answer's header")
                name, _, value = line.decode("latin-1").partition(":")
                fields[name.strip().lower()] = value.strip()
            if 100 <= status < 200:  # an interim answer: the real one follows
                continue
            keep = version != "HTTP/1.0" and fields.get("connection", "").lower() != "close"
            if method == "HEAD" or status in (204, 304):
                return status, b"", keep
            if "chunked" in fields.get("transfer-encoding", "").lower():
                return status, self._chunks(), keep
            if "content-length" in fields:
                n = int(fields["content-length"])
                body = self.rfile.read(n)
                if len(body) != n:
                    raise BadAnswer(f"the server closed the connection {len(body)} bytes into an answer of {n}")
                return status, body, keep
            return status, self.rfile.read(), False

    def _chunks(self) -> bytes:
        parts: List[bytes] = []
        while True:
            size = int(self._line().split(b";", 1)[0].strip() or b"x", 16)
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            part = self.rfile.read(size)
            if len(part) != size:
                raise BadAnswer("the server closed the connection in a chunk of its answer")
            parts.append(part)
            self._line()  # the chunk's CRLF


class Control:
    """A client of one run's control API ($JUKEBOX_CONTROL, with the token
    in $JUKEBOX_CONTROL_TOKEN)."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base.rstrip("/")
        self.token = token
        try:
            self._host, self._port, self._prefix = _split_url(self.base)
        except ValueError:
            raise JukeboxError(f"the control API's address {base!r} is not an http:// URL") from None
        # One kept-alive connection per thread, straight to the loopback
        # port: never through an HTTP proxy the environment names.
        self._local = threading.local()
        # json_batches: the server is a jukebox from before binary batches
        # (it refused one): staged writes go to it as JSON batches.
        self.json_batches = False

    def _kept(self) -> Optional[_Conn]:
        """This thread's connection, if it has one of this process's. A
        child forked with it (multiprocessing's fork, a pool's workers)
        shared it with its parent: their requests went down one socket and
        each could read the other's answer. The child lets its copy go
        (closing a copy of the socket leaves the parent's open)."""
        conn: Optional[_Conn] = getattr(self._local, "conn", None)
        if conn is not None and conn.pid != os.getpid():
            self._local.conn = None
            conn.close()
            return None
        return conn

    def _conn(self) -> _Conn:
        conn = self._kept()
        if conn is None:
            conn = _Conn(self._host, self._port, timeout=600)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Closes this thread's connection (the next request opens one)."""
        conn = self._kept()
        if conn is not None:
            self._local.conn = None
            conn.close()

    @classmethod
    def from_env(cls) -> Optional["Control"]:
        base = os.environ.get("JUKEBOX_CONTROL")
        if not base or base in _SERVED:
            return None
        token = os.environ.get("JUKEBOX_CONTROL_TOKEN", "")
        if not token:
            raise JukeboxError("JUKEBOX_CONTROL is set but JUKEBOX_CONTROL_TOKEN is not: "
                               "this jukebox predates the token, or the variable was dropped")
        return cls(base, token)

    def call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """One request to the control API: the answer, or the exception its
        error names."""
        data = json.dumps(body).encode() if body is not None else None
        return self.send(method, path, data, "application/json")

    def send(self, method: str, path: str, data: Optional[bytes], content_type: str) -> Dict[str, Any]:
        """call with a body encoded already, of content_type."""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        try:
            status, raw = self._send(method, path, data, headers)
        except OSError as e:
            err = JukeboxError(f"the jukebox control API at {self.base} does not answer: {e}")
            err.unanswered = True  # the request may have been served: Transaction.commit says what then
            raise err from None
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = {"error": {"message": f"HTTP {status} from the control API"}}
        if status != 200:
            raise _error(status, payload if isinstance(payload, dict) else {})
        out: Dict[str, Any] = payload
        return out

    def _send(self, method: str, path: str, data: Optional[bytes], headers: Dict[str, str]) -> Tuple[int, bytes]:
        """The answer's status and body. A kept-alive connection that the
        server closed while idle took no request: sent once more on a new
        one."""
        reused = self._kept() is not None
        target = f"{self._prefix}/{API}/{path.lstrip('/')}"
        while True:
            try:
                conn = self._conn()
                status, body, keep = conn.request(method, target, data, headers)
            except OSError as e:
                self.close()
                stale = isinstance(e, (ConnectionResetError, BrokenPipeError))
                if not (reused and stale):
                    raise
                reused = False
                continue
            if not keep:
                self.close()
            return status, body

    def breaker(self, agent: Optional[str] = None) -> None:
        """Raises BreakerTripped when the run's breaker has tripped; given
        an agent, only for a trip that stops it: the run's, or that agent's
        own (another agent's own limits refuse that agent's calls alone)."""
        out = self.call("GET", "breaker")
        if not out.get("tripped"):
            return
        trip = out.get("breaker") or {}
        if agent is not None and trip.get("agent") and trip.get("agent") != agent:
            return
        raise tripped(trip)


def tripped(trip: Dict[str, Any]) -> BreakerTripped:
    return BreakerTripped(f"circuit breaker tripped ({trip.get('rule')}): {trip.get('reason')}", trip)


class Served:
    """A run that `jukebox serve` records for this process: started here,
    ended by end()."""

    def __init__(self, name: str, tape_dir: str, breaker_config: Optional[str], argv: List[str]) -> None:
        import subprocess
        cmd = [jukebox_bin(), "serve", "--name", name, "--tape-dir", tape_dir]
        if breaker_config:
            cmd += ["--breaker-config", breaker_config]
        cmd += ["--", *argv]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self._stderr: List[bytes] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        line = _pipe(self.proc.stdout).readline()
        if not line:
            self.proc.wait()
            self._drain.join()
            raise JukeboxError(f"jukebox serve exited {self.proc.returncode} before serving: "
                               + b"".join(self._stderr).decode(errors="replace").strip())
        #: {"tape", "tape_id", "seed", "env"} as serve printed it.
        self.info: Dict[str, Any] = json.loads(line)
        env = self.info["env"]
        self.control = Control(env["JUKEBOX_CONTROL"], env["JUKEBOX_CONTROL_TOKEN"])
        _SERVED.add(self.control.base)

    def _read_stderr(self) -> None:
        for line in _pipe(self.proc.stderr):
            if not line.startswith(b"jukebox: serving") and not line.startswith(b"jukebox: recorded"):
                self._stderr.append(line)

    def end(self, exit_code: int, error: str = "") -> None:
        """Ends the run (run.end gets exit_code) and waits for the tape to close."""
        try:
            self.control.call("POST", "end", {"exit_code": exit_code, "error": error})
        finally:
            _SERVED.discard(self.control.base)
            _pipe(self.proc.stdin).close()
            self.proc.wait(timeout=60)
            self._drain.join()
        if self.proc.returncode not in (0, 7):
            raise JukeboxError(f"jukebox serve exited {self.proc.returncode}: "
                               + b"".join(self._stderr).decode(errors="replace").strip())


def _pipe(f: Optional[IO[bytes]]) -> IO[bytes]:
    """A pipe Popen made (PIPE was asked for, so it is there)."""
    assert f is not None
    return f
