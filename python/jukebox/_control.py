"""The control API client, and `jukebox serve` for agents that run on
their own. docs/control-api.md is the API's reference."""

import http.client
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
from typing import IO, Any, Dict, List, Optional, Set, Tuple

from .errors import AuthError, BreakerTripped, CommitConflict, JukeboxError, SandboxViolation, SQLError

API = "v1"

#: The control URLs of the runs this process's SDK serves: their variables
#: are in os.environ while a track runs, and a Jukebox made then must not
#: take them for a `jukebox record` around the process.
_SERVED: Set[str] = set()


def jukebox_bin() -> str:
    """The jukebox binary: $JUKEBOX_BIN, else `jukebox` on PATH."""
    path = os.environ.get("JUKEBOX_BIN") or shutil.which("jukebox")
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


class Control:
    """A client of one run's control API ($JUKEBOX_CONTROL, with the token
    in $JUKEBOX_CONTROL_TOKEN)."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base.rstrip("/")
        self.token = token
        url = urllib.parse.urlsplit(self.base)
        if url.scheme != "http" or not url.hostname:
            raise JukeboxError(f"the control API's address {base!r} is not an http:// URL")
        self._host, self._port, self._prefix = url.hostname, url.port or 80, url.path
        # One kept-alive connection per thread, straight to the loopback
        # port: never through an HTTP proxy the environment names.
        self._local = threading.local()
        # json_batches: the server is a jukebox from before binary batches
        # (it refused one): staged writes go to it as JSON batches.
        self.json_batches = False

    def _conn(self) -> http.client.HTTPConnection:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=600)
            self._local.conn = conn
        return conn

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
        except (OSError, http.client.HTTPException) as e:
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
        reused = getattr(self._local, "conn", None) is not None
        while True:
            conn = self._conn()
            try:
                conn.request(method, f"{self._prefix}/{API}/{path.lstrip('/')}", body=data, headers=headers)
                resp = conn.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                self._local.conn = None
                stale = isinstance(e, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))
                if not (reused and stale):
                    raise
                reused = False

    def breaker(self) -> None:
        """Raises BreakerTripped when the run's breaker has tripped."""
        out = self.call("GET", "breaker")
        if out.get("tripped"):
            raise tripped(out["breaker"])


def tripped(trip: Dict[str, Any]) -> BreakerTripped:
    return BreakerTripped(f"circuit breaker tripped ({trip.get('rule')}): {trip.get('reason')}", trip)


class Served:
    """A run that `jukebox serve` records for this process: started here,
    ended by end()."""

    def __init__(self, name: str, tape_dir: str, breaker_config: Optional[str], argv: List[str]) -> None:
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
