"""The reused server: `jukebox serve --socket`, one per user, working
folder, tape folder, breaker config, jukebox binary and values of the
variables it reads or records (_KEY_VARS), started by the first track
that needs it and left to exit when idle (10 minutes without a run, or
JUKEBOX_SERVE_IDLE, a Go duration such as "30s"). A run on it costs a
connection instead of the start of a process. JUKEBOX_SERVE_POOL=0
starts a `jukebox serve` per run instead."""

import json
import os
import socket
import stat
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    import subprocess

from ._control import _SERVED, Control, jukebox_bin
from .errors import JukeboxError

#: The servers this process started (kept, so that none is reaped early).
_STARTED: List["subprocess.Popen[bytes]"] = []


def _folder() -> Optional[str]:
    """The user's folder for the sockets, 0700 and the user's own, or
    None when it cannot be (then each run starts a process)."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None
    path = os.path.join(_tempdir(), f"jukebox-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


def _tempdir() -> str:
    """tempfile.gettempdir() without importing tempfile (and random and
    shutil with it), which nothing else of a track needs: the first of
    $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp and /usr/tmp that is a folder
    this user can write to, else the working folder (as gettempdir
    chooses, which also writes a file there to be sure)."""
    for var in ("TMPDIR", "TEMP", "TMP"):
        path = os.environ.get(var)
        if path and os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK):
            return os.path.abspath(path)
    for path in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK):
            return path
    return os.getcwd()


#: The variables a reused server reads as a process (its state, cache and
#: config folders, its temporary folder, PostgreSQL's defaults, the CA
#: bundle, the user's name) or writes on each run's tape as the run's
#: (engine/session.go's runStartEnv): a server started with other values
#: would use, or record, those. Seen: with HOME inside the workspace the
#: booth refused to begin and said to set XDG_STATE_HOME; set, the next
#: process reached the same server, which went on refusing.
_KEY_VARS = frozenset(("HOME", "PATH", "TMPDIR", "USER", "LOGNAME", "LANG", "TZ", "TERM", "PYTHONPATH",
                       "PYTHONHASHSEED", "NODE_ENV", "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR"))
_KEY_PREFIXES = ("JUKEBOX_", "XDG_", "PG", "LC_", "AGENT_")
#: A run's own variables, which its server sets: never part of the key.
_RUN_VARS = frozenset(("JUKEBOX_CONTROL", "JUKEBOX_CONTROL_TOKEN", "JUKEBOX_TAPE", "JUKEBOX_SEED"))


def _keyed(name: str) -> bool:
    if name in _RUN_VARS:
        return False
    return (name in _KEY_VARS or name.startswith(_KEY_PREFIXES) or name.endswith("_BASE_URL")
            or name.endswith("_PROXY") or name.endswith("_proxy"))


def _key(tape_dir: str, config: Dict[str, Any], binary: str) -> str:
    """What makes two runs' servers interchangeable."""
    import hashlib
    env = {k: v for k, v in os.environ.items() if _keyed(k)}
    st = os.stat(binary)
    what = [os.path.realpath(binary), st.st_mtime_ns, st.st_size, os.getcwd(), tape_dir, config, env]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:24]


def pooled() -> bool:
    """Whether runs go to the reused server."""
    return os.environ.get("JUKEBOX_SERVE_POOL", "1") != "0" and _folder() is not None


class PooledRun:
    """A run of the reused server, on a connection of its own: the run
    ends when it is ended through the control API or the connection
    closes."""

    def __init__(self, name: str, tape_dir: str, config: Dict[str, Any], argv: List[str]) -> None:
        folder = _folder()
        if folder is None:
            raise JukeboxError("no private folder for the reused server's socket")
        binary = jukebox_bin()
        key = _key(tape_dir, config, binary)
        path = os.path.join(folder, f"serve-{key}.sock")
        sock = self._connect(path)
        if sock is None:
            _start(binary, folder, key, path, tape_dir, config)
            sock = self._connect(path)
        if sock is None:
            raise JukeboxError(f"jukebox serve --socket {path}: started, but does not answer")
        self._sock = sock
        self._file = sock.makefile("rwb")
        self._file.write(json.dumps({"name": name, "argv": argv}).encode() + b"\n")
        self._file.flush()
        line = json.loads(self._file.readline() or b"{}")
        if "env" not in line:
            self._close()
            raise JukeboxError(f"jukebox serve did not start the run: {line.get('error') or 'it closed the connection'}")
        #: {"tape", "tape_id", "seed", "env"} as serve printed it.
        self.info: Dict[str, Any] = line
        env = self.info["env"]
        self.control = Control(env["JUKEBOX_CONTROL"], env["JUKEBOX_CONTROL_TOKEN"])
        _SERVED.add(self.control.base)

    @staticmethod
    def _connect(path: str) -> Optional[socket.socket]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            return None

    def _close(self) -> None:
        self._file.close()
        self._sock.close()

    def end(self, exit_code: int, error: str = "") -> None:
        """Ends the run (run.end gets exit_code) and waits for the tape to close."""
        try:
            self.control.call("POST", "end", {"exit_code": exit_code, "error": error})
            done = json.loads(self._file.readline() or b'{"code": -1, "error": "the server closed the connection"}')
        finally:
            _SERVED.discard(self.control.base)
            self._close()
        if done.get("code") not in (0, 7):
            raise JukeboxError(f"jukebox serve: the run ended with {done.get('code')}: {done.get('error', '')}")


def _start(binary: str, folder: str, key: str, path: str, tape_dir: str, config: Dict[str, Any]) -> None:
    """Starts the reused server in a session of its own, and waits until it
    listens (or another one does)."""
    import subprocess
    cmd = [binary, "serve", "--socket", path, "--tape-dir", tape_dir]
    if os.environ.get("JUKEBOX_SERVE_IDLE"):
        cmd += ["--idle", os.environ["JUKEBOX_SERVE_IDLE"]]
    conf = ""
    if config:
        conf = os.path.join(folder, f"serve-{key}.json")
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f)
        cmd += ["--breaker-config", conf]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    assert proc.stdout is not None
    proc.stdout.readline()  # {"pid"} once it listens; nothing when another one does
    proc.stdout.close()
    if conf:
        # The server read its limits before it said it listens (another one
        # already listening read its own): nothing is left in the folder.
        try:
            os.unlink(conf)
        except OSError:
            pass
    _STARTED.append(proc)
